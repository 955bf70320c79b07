import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { dereferenced } from '../../helpers/openapi.ts';

let app: TestApp;
let doc: {
  paths: Record<
    string,
    Record<
      string,
      {
        operationId: string;
        responses: Record<string, { content?: Record<string, { schema: Record<string, unknown> }> }>;
      }
    >
  >;
};
beforeAll(async () => {
  app = await startTestApp();
  doc = await dereferenced((await app.http().get('/api/v1/openapi.json')).body);
});
afterAll(async () => {
  await app?.close();
});

const op = (path: string, method: string) => doc.paths[path]![method]!;

describe('OpenAPI for the sign-in routes', () => {
  it('documents every route with its answers', () => {
    const expected: [string, string, string, string[]][] = [
      ['/api/v1/auth/login', 'post', 'auth-session-login', ['200', '401', '403', '422', '429']],
      ['/api/v1/auth/logout', 'post', 'auth-session-logout', ['204']],
      ['/api/v1/auth/me', 'get', 'auth-identity-read', ['200', '401']],
      ['/api/v1/auth/password', 'post', 'auth-password-change', ['204', '401', '403', '422', '429']],
      ['/api/v1/auth/password/forgot', 'post', 'auth-password-forgot', ['202', '403', '422', '429']],
      ['/api/v1/auth/password/reset', 'post', 'auth-password-reset', ['204', '401', '403', '409', '422', '429']],
      ['/api/v1/auth/roles', 'get', 'auth-role-list', ['200', '401', '403']],
      ['/api/v1/auth/roles/{name}', 'put', 'auth-role-put', ['200', '201', '401', '403', '422']],
      ['/auth/reset', 'get', 'auth-page-reset', ['200']],
    ];
    for (const [path, method, operationId, statuses] of expected) {
      const operation = op(path, method);
      expect(operation.operationId).toBe(operationId);
      expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(statuses));
      for (const status of statuses.filter((s) => Number(s) >= 400)) {
        expect(Object.keys(operation.responses[status]!.content ?? {}), `${operationId} ${status}`).toEqual([
          'application/problem+json',
        ]);
      }
    }
  });

  it('spells out the Identity, the role and the forgot answer', () => {
    const identity = op('/api/v1/auth/login', 'post').responses['200']!.content!['application/json']!.schema;
    expect(identity).toMatchObject({
      required: ['userId', 'email', 'displayName', 'roles', 'permissions'],
      additionalProperties: false,
    });
    expect(op('/api/v1/auth/me', 'get').responses['200']!.content!['application/json']!.schema).toEqual(identity);
    const role = op('/api/v1/auth/roles/{name}', 'put').responses['201']!.content!['application/json']!.schema;
    expect(role).toMatchObject({ required: ['name', 'permissions', 'createdAt', 'updatedAt'] });
    const forgot = op('/api/v1/auth/password/forgot', 'post').responses['202']!.content!['application/json']!.schema;
    expect(forgot).toMatchObject({ required: ['detail'] });
    expect(Object.keys(op('/auth/reset', 'get').responses['200']!.content!)).toEqual(['text/html']);
  });
});
