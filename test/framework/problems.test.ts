import Type from 'typebox';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, createCustomer, signInAs, type TestApp } from '../helpers/app.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { allModules } from '../../modules/index.ts';
import { defineModule, defineProblems, defineRoute, type ProblemCodesOf } from '../../framework/entity/define.ts';
import { problemText } from '../../framework/admin/errors.ts';
import {
  PROBLEMS,
  installedProblems,
  problem,
  problemDeclaration,
  problemType,
  type ProblemCode,
} from '../../framework/errors.ts';

// A refusal of the test's own module: declared here, beside the module, and nowhere in the framework.
const failingProblems = defineProblems({
  THING_BUSY: { status: 423, title: 'Thing busy', sentence: 'The thing is busy. Try again when it is free.' },
});
declare module '../../framework/contracts/problems.ts' {
  interface ProblemCodes extends ProblemCodesOf<typeof failingProblems> {}
}

// A module whose routes fail in each way a real handler can.
const SECRET_TABLE = 'secret_ledger_7f3a';
const SECRET_TEXT = 'hunter2-do-not-leak';
const ok = { 200: Type.Object({ ok: Type.Boolean() }) };

const failingModule = defineModule({
  name: 'failing',
  problems: failingProblems,
  routes: [
    defineRoute({
      method: 'GET',
      url: '/api/v1/failing/busy',
      operationId: 'failingBusy',
      summary: 'Refuses with a problem of its own module',
      access: 'public',
      problems: { 423: 'The thing is busy (THING_BUSY)' },
      schema: { response: ok },
      handler: async () => {
        throw problem('THING_BUSY', 'The thing is held by another job');
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/failing/sql',
      operationId: 'failingSql',
      summary: 'Runs SQL against a table that does not exist',
      access: 'public',
      schema: { response: ok },
      handler: async ({ tx }) => {
        await sql`select * from ${sql.raw(SECRET_TABLE)} where password = ${SECRET_TEXT}`.execute(tx.db);
        return { ok: true };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/failing/syntax',
      operationId: 'failingSyntax',
      summary: 'Sends SQL with a syntax error',
      access: 'public',
      schema: { response: ok },
      handler: async ({ tx }) => {
        await sql`selec ${sql.raw(`'${SECRET_TEXT}'`)} from ${sql.raw(SECRET_TABLE)}`.execute(tx.db);
        return { ok: true };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/failing/throw',
      operationId: 'failingThrow',
      summary: 'Throws a plain error',
      access: 'public',
      schema: { response: ok },
      handler: async () => {
        throw new TypeError(`cannot read ${SECRET_TEXT} of undefined`);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/failing/conflict',
      operationId: 'failingConflict',
      summary: 'Refuses with a problem of the registry',
      access: 'public',
      schema: { response: ok },
      handler: async () => {
        throw problem('CONFLICT', 'The thing is busy');
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v1/failing/echo',
      operationId: 'failingEcho',
      summary: 'Accepts a strict body',
      access: 'public',
      schema: {
        body: Type.Object(
          {
            name: Type.String({ minLength: 1 }),
            count: Type.Integer({ minimum: 0 }),
            tags: Type.Optional(Type.Array(Type.String())),
          },
          { additionalProperties: false },
        ),
        response: ok,
      },
      handler: async () => ({ ok: true }),
    }),
  ],
});

let app: TestApp;
let cookie: string;
const HOST = 'errors.localhost';

beforeAll(async () => {
  app = await startTestApp({ modules: [...allModules, testkitModule, failingModule] });
  const tenant = await createCustomer(app, 'errors');
  cookie = (await signInAs(app, tenant, ['widget:read', 'widget:write'])).cookie;
});
afterAll(async () => {
  await app?.close();
});

/** Asserts the response is a problem document of this code, built from the registry. */
function expectProblem(
  res: { status: number; headers: Record<string, string>; body: Record<string, unknown> },
  code: ProblemCode,
): void {
  const declared = problemDeclaration(code)!;
  expect(res.status).toBe(declared.status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({
    type: problemType(code),
    title: declared.title,
    status: declared.status,
    code,
  });
  expect(typeof res.body.detail).toBe('string');
  const allowed = new Set(['type', 'title', 'status', 'detail', 'code', 'errors', 'requestId']);
  expect(Object.keys(res.body).filter((k) => !allowed.has(k))).toEqual([]);
  // Every problem names its request, as the X-Request-Id answer header does.
  expect(res.body.requestId).toBe(res.headers['x-request-id']);
}

describe('the problem registry', () => {
  it("every code has an HTTP error status and a title: the framework's and every installed module's", () => {
    expect(installedProblems().size).toBeGreaterThan(Object.keys(PROBLEMS).length);
    for (const [code, { declaration }] of installedProblems()) {
      const { status, title } = declaration;
      expect(status, code).toBeGreaterThanOrEqual(400);
      expect(status, code).toBeLessThan(600);
      expect(title.length, code).toBeGreaterThan(0);
    }
  });

  it("the framework's list holds only its own: each module's codes are declared by that module", () => {
    const byModule: [string, string][] = allModules.flatMap((m) =>
      Object.keys(m.problems ?? {}).map((code): [string, string] => [code, m.name]),
    );
    expect(byModule.length).toBeGreaterThan(10);
    for (const [code, module] of byModule) {
      expect(Object.keys(PROBLEMS), code).not.toContain(code);
      expect(installedProblems().get(code)?.owner, code).toBe(module);
    }
    const ownerOf = (code: string) => installedProblems().get(code)?.owner;
    expect(['PLAN_IN_USE', 'LAST_ADMINISTRATOR', 'SLUG_TAKEN', 'OIDC_REFUSED', 'FILE_TOO_LARGE'].map(ownerOf)).toEqual([
      'billing',
      'user',
      'content',
      'auth',
      'file',
    ]);
    expect(ownerOf('NOT_FOUND')).toBe('framework');
  });

  it("a new module's own refusal needs no framework edit: its status, title and the sentence a person reads", async () => {
    const res = await app.http(HOST).get('/api/v1/failing/busy');
    expectProblem(res, 'THING_BUSY');
    expect(res.body).toMatchObject({ status: 423, title: 'Thing busy', detail: 'The thing is held by another job' });
    expect(problemText(problem('THING_BUSY'))).toEqual({ sentence: 'The thing is busy. Try again when it is free.' });
  });

  it('a registry problem thrown by a handler leaves as its document', async () => {
    const res = await app.http(HOST).get('/api/v1/failing/conflict');
    expectProblem(res, 'CONFLICT');
    expect(res.body.detail).toBe('The thing is busy');
  });
});

describe('unknown route', () => {
  it.each([
    ['GET', '/api/v1/no/such/thing'],
    ['POST', '/api/v1/testkit/gizmos'],
    ['PUT', '/api/v1/testkit/gizmos'],
    ['GET', '/'],
  ])('%s %s → 404 ROUTE_NOT_FOUND', async (method, path) => {
    const http = app.http(HOST);
    const res = await (method === 'GET'
      ? http.get(path)
      : method === 'POST'
        ? http.post(path).send({})
        : http.put(path).send({}));
    expectProblem(res, 'ROUTE_NOT_FOUND');
  });

  it('PUT /api/v1/testkit/widgets (a known path, an undeclared method) → 405 METHOD_NOT_ALLOWED with Allow', async () => {
    const res = await app.http(HOST).put('/api/v1/testkit/widgets').send({});
    expectProblem(res, 'METHOD_NOT_ALLOWED');
    expect(res.headers.allow).toBe('GET, HEAD, POST');
  });
});

describe('malformed JSON', () => {
  it.each(['{"name": "a", ', '{name: a}', 'not json', '[1, 2'])('%j → 400 MALFORMED_REQUEST', async (body) => {
    const res = await app.http(HOST).post('/api/v1/failing/echo').set('Content-Type', 'application/json').send(body);
    expectProblem(res, 'MALFORMED_REQUEST');
  });

  it('on a generic entity route too, for a signed-in caller', async () => {
    const res = await app
      .http(HOST)
      .post('/api/v1/testkit/widgets')
      .set('Cookie', cookie)
      .set('Content-Type', 'application/json')
      .send('{"name": }');
    expectProblem(res, 'MALFORMED_REQUEST');
  });
});

describe('schema violation', () => {
  it('422 VALIDATION_FAILED with one entry per offending field', async () => {
    const res = await app
      .http(HOST)
      .post('/api/v1/failing/echo')
      .send({ name: '', count: 'many', tags: [1], extra: true });
    expectProblem(res, 'VALIDATION_FAILED');
    const errors = res.body.errors as { pointer: string; message: string }[];
    expect(Array.isArray(errors)).toBe(true);
    const pointers = errors.map((e) => e.pointer);
    expect([...pointers].sort()).toEqual(['/body/count', '/body/extra', '/body/name', '/body/tags/0']);
    for (const e of errors) expect(e.message.length).toBeGreaterThan(0);
  });

  it('a missing required field is named', async () => {
    const res = await app.http(HOST).post('/api/v1/failing/echo').send({ count: 1 });
    expectProblem(res, 'VALIDATION_FAILED');
    expect(res.body.errors).toEqual([{ pointer: '/body/name', message: 'is required' }]);
  });

  it('on a generic entity route: the widget’s field rules', async () => {
    const res = await app
      .http(HOST)
      .post('/api/v1/testkit/widgets')
      .set('Cookie', cookie)
      .send({ name: 'w', size: 5000, color: 'red' });
    expectProblem(res, 'VALIDATION_FAILED');
    expect((res.body.errors as { pointer: string }[]).map((e) => e.pointer)).toContain('/body/size');
  });

  it('a valid body passes', async () => {
    const res = await app.http(HOST).post('/api/v1/failing/echo').send({ name: 'a', count: 0 });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
  });
});

describe('unexpected error', () => {
  it.each([
    ['/api/v1/failing/sql', 'a database error'],
    ['/api/v1/failing/syntax', 'an SQL syntax error'],
    ['/api/v1/failing/throw', 'a programming error'],
  ])('%s (%s) → 500 INTERNAL with no stack trace and no SQL text', async (path) => {
    const res = await app.http(HOST).get(path);
    expectProblem(res, 'INTERNAL');
    for (const leak of [
      SECRET_TABLE,
      SECRET_TEXT,
      'select',
      'selec',
      'relation',
      'syntax',
      'TypeError',
      'at ',
      '.ts:',
      'node_modules',
      'stack',
    ]) {
      expect(res.text.toLowerCase(), `leaks ${leak}`).not.toContain(leak.toLowerCase());
    }
  });

  it('the transaction of a failed request is rolled back and the app keeps serving', async () => {
    expect((await app.http(HOST).get('/api/v1/failing/sql')).status).toBe(500);
    const res = await app.http(HOST).get('/api/v1/testkit/widgets').set('Cookie', cookie);
    expect(res.status).toBe(200);
  });
});
