import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import SwaggerParser from '@apidevtools/swagger-parser';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { PASSWORD_MIN_LENGTH } from '../../modules/user/passwords.ts';
import { DEFAULT_BODY_LIMIT } from '../../framework/http/register-route.ts';

interface Operation {
  operationId?: string;
  security?: Record<string, string[]>[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Record<string, unknown> }> };
  parameters?: { in: string; name: string; required?: boolean; schema: Record<string, unknown> }[];
  responses: Record<string, { description: string; content?: Record<string, { schema: Record<string, unknown> }> }>;
  'x-access'?: string;
}
type Document = {
  openapi: string;
  info: { title: string; version: string; description?: string };
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes: Record<string, Record<string, string>>; schemas: Record<string, unknown> };
};

let app: TestApp;
/** The document as served, with its $refs. */
let raw: Document;
/** The same, $refs resolved: what most checks read. */
let doc: Document;
const operations = new Map<string, Operation & { method: string; path: string }>();
const rawOperations = new Map<string, Operation>();

beforeAll(async () => {
  app = await startTestApp();
  const res = await app.http().get('/api/v1/openapi.json');
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  raw = res.body;
  doc = (await SwaggerParser.dereference(structuredClone(raw) as never)) as unknown as Document;
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods))
      operations.set(`${method.toUpperCase()} ${path}`, { ...op, method, path });
  }
  for (const [path, methods] of Object.entries(raw.paths)) {
    for (const [method, op] of Object.entries(methods)) rawOperations.set(`${method.toUpperCase()} ${path}`, op);
  }
});
afterAll(async () => {
  await app?.close();
});

const openApiPath = (url: string): string => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
const registered = () => [
  // Hidden routes serve people, not the API (a public read's HTML page, e.g. /p/<slug>): not documented.
  ...app.services.routes.map((r) => r.route).filter((route) => !route.hidden),
  // The catalog route is the framework's own, registered beside the modules' routes.
  {
    method: 'GET',
    url: '/api/v1/admin/resources',
    operationId: 'admin-resource-list',
    access: 'signedIn' as const,
    schema: {},
  },
  // So is the tenant's activity (framework/events/activity.ts).
  {
    method: 'GET',
    url: '/api/v1/audit/activity',
    operationId: 'audit-activity-list',
    access: { permission: 'audit:read' },
    schema: {},
  },
  // The batch route is the framework's own too (framework/bulk/batch.ts).
  { method: 'POST', url: '/api/v1/batch', operationId: 'batch-request-run', access: 'signedIn' as const, schema: {} },
  // And the progress of imports (framework/bulk/imports/).
  {
    method: 'GET',
    url: '/api/v1/imports/:id',
    operationId: 'import-import-read',
    access: 'signedIn' as const,
    schema: {},
  },
  // The probes: outside any tenant, but documented like every route.
  { method: 'GET', url: '/health', operationId: 'system-health-read', access: 'public' as const, schema: {} },
  { method: 'GET', url: '/ready', operationId: 'system-readiness-read', access: 'public' as const, schema: {} },
];

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1 and passes a real validator', async () => {
    expect(doc.openapi).toBe('3.1.0');
    // The validator dereferences in place: it gets its own copy.
    await expect(SwaggerParser.validate(structuredClone(raw) as never)).resolves.toBeTruthy();
  });

  it('contains every registered route and command under its operation id, and nothing else', () => {
    const expected = registered()
      .map((r) => `${r.method} ${openApiPath(r.url)} ${r.operationId}`)
      .sort();
    const actual = [...operations.values()]
      .map((op) => `${op.method.toUpperCase()} ${op.path} ${op.operationId}`)
      .sort();
    expect(actual).toEqual(expected);
  });

  it('names every generic route and command <module>-<entity>-<verb>, every route after its module, uniquely', () => {
    const ids = [...operations.values()].map((op) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { module, route } of app.services.routes) {
      expect(route.operationId.startsWith(`${module}-`), route.operationId).toBe(true);
      expect(route.operationId).toMatch(/^[a-z0-9]+(-[a-z0-9]+){2,}$/);
    }
    expect(app.services.registry.entities.length).toBeGreaterThan(0);
    for (const entity of app.services.registry.entities) {
      const { path, operationId } = entity.names;
      const at = (key: string) => operations.get(key)?.operationId;
      if (entity.def.singleton) {
        // One resource with no id: read, the declared routes and the commands, nothing else.
        expect(at(`GET ${path}`)).toBe(`${entity.module}-${entity.name}-read`);
        const declared = entity.def.singletonRoutes ?? [];
        expect(at(`PUT ${path}`)).toBe(declared.includes('replace') ? operationId('replace') : undefined);
        expect(at(`PATCH ${path}`)).toBe(declared.includes('update') ? operationId('update') : undefined);
        expect(at(`DELETE ${path}`)).toBe(declared.includes('delete') ? operationId('delete') : undefined);
        expect(at(`POST ${path}`)).toBeUndefined();
        expect([...operations.keys()].filter((k) => k.includes(`${path}/{id}`))).toEqual([]);
        for (const command of Object.keys(entity.def.commands ?? {})) {
          expect(at(`POST ${path}/${command}`)).toBe(`${entity.module}-${entity.name}-${command}`);
        }
        // History, unless declared off; a singleton restores only through its PATCH.
        const keeps = entity.def.history !== false;
        expect(at(`GET ${path}/history`)).toBe(keeps ? operationId('history') : undefined);
        expect(at(`POST ${path}/restore`)).toBe(
          keeps && declared.includes('update') ? operationId('restore') : undefined,
        );
        continue;
      }
      expect(at(`GET ${path}`)).toBe(`${entity.module}-${entity.name}-list`);
      expect(at(`POST ${path}`)).toBe(operationId('create'));
      expect(at(`GET ${path}/{id}`)).toBe(operationId('read'));
      expect(at(`PATCH ${path}/{id}`)).toBe(operationId('update'));
      expect(at(`DELETE ${path}/{id}`)).toBe(operationId('delete'));
      for (const command of Object.keys(entity.def.commands ?? {})) {
        expect(at(`POST ${path}/{id}/${command}`)).toBe(`${entity.module}-${entity.name}-${command}`);
      }
      const keeps = entity.def.history !== false;
      expect(at(`GET ${path}/{id}/history`)).toBe(keeps ? operationId('history') : undefined);
      expect(at(`POST ${path}/{id}/restore`)).toBe(keeps ? operationId('restore') : undefined);
    }
    expect(operations.get('GET /api/v1/task/tasks/{id}/history')?.operationId).toBe('task-task-history');
    expect(operations.get('POST /api/v1/testkit/widgets/{id}/approve')?.operationId).toBe('testkit-widget-approve');
    expect(operations.get('GET /api/v1/testkit/setting')?.operationId).toBe('testkit-setting-read');
    expect(operations.get('POST /api/v1/testkit/setting/activate')?.operationId).toBe('testkit-setting-activate');
    expect(operations.get('PUT /api/v1/testkit/setting')).toBeUndefined();
  });

  it('gives every route a response schema, and every route with a body its request schema', () => {
    for (const route of registered()) {
      const op = operations.get(`${route.method} ${openApiPath(route.url)}`)!;
      const success = Object.entries(op.responses).filter(([status]) => status.startsWith('2'));
      expect(success.length, route.operationId).toBeGreaterThan(0);
      for (const [status, response] of success) {
        if (status === '204') expect(response.content, route.operationId).toBeUndefined();
        // JSON, an HTML page (the set-password page a mailed link opens), bytes (a streamed file, a tenant's
        // export archive) or server-sent events (a list's stream of live changes).
        else {
          const content = response.content ?? {};
          expect(
            (
              content['application/json'] ??
              content['text/html'] ??
              content['application/octet-stream'] ??
              content['application/gzip'] ??
              content['text/event-stream'] ??
              content['*/*']
            )?.schema,
            `${route.operationId} ${status}`,
          ).toBeTruthy();
        }
      }
      if ('body' in route.schema && route.schema.body) {
        expect(op.requestBody?.content['application/json']?.schema, route.operationId).toBeTruthy();
      }
    }
  });

  it('derives the entity request schemas: create without command-owned fields, PATCH also without immutable ones, both closed', () => {
    const create = operations.get('POST /api/v1/testkit/widgets')!.requestBody!.content['application/json']!.schema as {
      properties: Record<string, unknown>;
      required: string[];
      additionalProperties: boolean;
    };
    expect(Object.keys(create.properties).sort()).toEqual(['color', 'name', 'note', 'size']);
    expect([...create.required].sort()).toEqual(['color', 'name', 'size']);
    expect(create.additionalProperties).toBe(false);
    const patch = operations.get('PATCH /api/v1/testkit/widgets/{id}')!.requestBody!.content['application/json']!
      .schema as typeof create;
    expect(Object.keys(patch.properties).sort()).toEqual(['name', 'note', 'size']);
    expect(patch.required ?? []).toEqual([]);
    expect(patch.additionalProperties).toBe(false);
    expect(operations.get('GET /api/v1/testkit/widgets')!.responses['200']!.description).toBe('A page of widgets');
    for (const entity of app.services.registry.entities) {
      const { path } = entity.names;
      const keys = entity.def.singleton
        ? [`GET ${path}`]
        : [`GET ${path}`, `POST ${path}`, `GET ${path}/{id}`, `PATCH ${path}/{id}`];
      for (const key of keys) {
        const success = Object.entries(operations.get(key)!.responses).find(([status]) => status.startsWith('2'))!;
        expect(success[1].description, key).not.toBe('Default Response');
      }
    }
    const command = operations.get('POST /api/v1/testkit/widgets/{id}/approve')!;
    expect(command.requestBody?.content['application/json']?.schema).toMatchObject({ additionalProperties: false });
    expect(command.responses['200']?.content?.['application/json']?.schema).toMatchObject({ title: 'Widget' });
  });

  it("documents read-only and computed fields, hard delete, global scope, row access and the singleton's answers", () => {
    const body = (key: string) =>
      operations.get(key)!.requestBody!.content['application/json']!.schema as { properties: Record<string, unknown> };
    const answer = (key: string, status: string) =>
      operations.get(key)!.responses[status]!.content!['application/json']!.schema as {
        properties: Record<string, unknown>;
      };
    // memo: long is set by the service only, excerpt is added by afterRead.
    expect(Object.keys(body('POST /api/v1/testkit/memos').properties).sort()).toEqual(['ownerId', 'text']);
    expect(Object.keys(body('PATCH /api/v1/testkit/memos/{id}').properties)).toEqual(['text']);
    for (const key of ['GET /api/v1/testkit/memos/{id}', 'POST /api/v1/testkit/memos/{id}/pin']) {
      expect(Object.keys(answer(key, '200').properties), key).toEqual(expect.arrayContaining(['long', 'excerpt']));
    }
    expect((operations.get('DELETE /api/v1/testkit/memos/{id}') as { description?: string }).description).toMatch(
      /^Hard delete/,
    );
    expect((operations.get('DELETE /api/v1/testkit/gadgets/{id}') as { description?: string }).description).toMatch(
      /^Soft delete.*may refuse/,
    );
    expect((operations.get('GET /api/v1/testkit/setting') as { description?: string }).description).toMatch(
      /404 NOT_FOUND until it exists/,
    );
    expect(operations.get('GET /api/v1/testkit/setting')!.parameters ?? []).toEqual([]);
    expect((operations.get('POST /api/v1/testkit/setting/activate') as { description?: string }).description).toMatch(
      /may create it/,
    );
    for (const key of [
      'GET /api/v1/testkit/memos',
      'GET /api/v1/testkit/memos/{id}',
      'PATCH /api/v1/testkit/memos/{id}',
      'POST /api/v1/testkit/memos/{id}/pin',
    ]) {
      expect((operations.get(key) as { description?: string }).description, key).toMatch(
        /another caller's row answers 404/,
      );
    }
    expect((operations.get('GET /api/v1/testkit/gadgets') as { description?: string }).description).toMatch(
      /every tenant reads the same rows/,
    );
  });

  it('documents the paging and sorting parameters on every list route', () => {
    for (const entity of app.services.registry.entities.filter((e) => !e.def.singleton)) {
      const params = operations.get(`GET ${entity.names.path}`)!.parameters!;
      const byName = Object.fromEntries(params.map((p) => [p.name, p]));
      expect(byName.sort!.schema).toMatchObject({ type: 'string', default: 'createdAt' });
      // Several keys (issue 44): the pattern takes each sort, either way, and lists of them.
      const sorts = new RegExp((byName.sort!.schema as { pattern: string }).pattern);
      for (const sort of ['createdAt', '-createdAt', 'updatedAt', '-updatedAt', 'createdAt,-updatedAt'])
        expect(sorts.test(sort), `${entity.names.key} sort=${sort}`).toBe(true);
      expect(sorts.test('nope'), entity.names.key).toBe(false);
      expect((byName.sort as { description?: string }).description).toMatch(/An index serves: createdAt, -createdAt/);
    }
  });

  it('offers Prefer: replica on every generated list and read by id, documented as eventually consistent', () => {
    for (const entity of app.services.registry.entities.filter((e) => !e.def.singleton)) {
      for (const key of [`GET ${entity.names.path}`, `GET ${entity.names.path}/{id}`]) {
        const prefer = (operations.get(key)!.parameters ?? []).find((p) => p.in === 'header' && p.name === 'prefer');
        expect(prefer?.required, key).toBe(false);
        expect((prefer as { description?: string } | undefined)?.description, key).toMatch(
          /Eventually consistent.*Preference-Applied: replica/s,
        );
        const answer = operations.get(key)!.responses['200'] as { headers?: Record<string, { schema: unknown }> };
        expect(answer.headers?.['Preference-Applied']?.schema, key).toEqual({ type: 'string', enum: ['replica'] });
      }
    }
    // A write takes no such header.
    const create = operations.get('POST /api/v1/testkit/widgets')!.parameters ?? [];
    expect(create.filter((p) => p.name === 'prefer')).toEqual([]);
    const created = operations.get('POST /api/v1/testkit/widgets')!.responses['201'] as { headers?: object };
    expect(created.headers ?? {}).not.toHaveProperty('Preference-Applied');
  });

  /** The list routes that take a filter beyond the paging parameters and q, and its names. */
  const LIST_FILTERS: Record<string, readonly string[]> = {
    'GET /api/v1/auth/tokens': ['userId'],
    // The public list's kind (issue 48, point 6), until the query language's filters reach it.
    'GET /api/v1/content/public': ['kind'],
  };

  it('gives every list route, generated or hand-written, the same optional paging parameters and the same answer', () => {
    const lists = [...operations.entries()].filter(([, op]) => {
      const schema = op.responses['200']?.content?.['application/json']?.schema as
        | { properties?: Record<string, unknown> }
        | undefined;
      return schema?.properties?.items !== undefined;
    });
    const keys = lists.map(([key]) => key);
    expect(keys).toEqual(
      expect.arrayContaining([
        'GET /api/v1/tenant/tenants',
        'GET /api/v1/auth/roles',
        'GET /api/v1/testkit/widgets',
        'GET /api/v1/user/users',
      ]),
    );
    for (const [key, op] of lists) {
      // A record's history is a list under its path's id; a list that may read from the replica
      // takes the Prefer header beside its query (docs/api-conventions.md).
      const params = op.parameters!.filter((p) => p.in !== 'path' && p.in !== 'header');
      for (const header of op.parameters!.filter((p) => p.in === 'header'))
        expect([header.name, header.required], key).toEqual(['prefer', false]);
      const byName = Object.fromEntries(params.map((p) => [p.name, p]));
      // A list over searchable fields also takes q (docs/api-conventions.md, "Search: q"); a list
      // may take a filter of its own beside the paging parameters (the tokens list's userId).
      const filters = LIST_FILTERS[key] ?? [];
      // A list that takes the query language (issue 44) also takes one parameter per filterable
      // field (its operators as the pattern), or, fields and, when it has references, expand.
      const queried = (name: string) => {
        if (name === 'or' || name === 'fields' || name === 'expand') return true;
        const schema = byName[name]!.schema as { anyOf?: { pattern?: string }[] };
        return /^\^\(not\\\.\)\?\(/.test(schema.anyOf?.[0]?.pattern ?? '');
      };
      expect(
        Object.keys(byName)
          .filter((name) => name !== 'q' && !filters.includes(name) && !queried(name))
          .sort(),
        key,
      ).toEqual(['after', ...(byName.format ? ['format'] : []), 'limit', 'offset', 'sort']);
      // A list that exports (issue 48) takes format=, and documents its CSV and NDJSON and the 406.
      if (byName.format) {
        expect(byName.format.schema, key).toMatchObject({ type: 'string', enum: ['json', 'csv', 'ndjson'] });
        expect(Object.keys(op.responses['200']!.content!).sort(), key).toEqual([
          'application/json',
          'application/x-ndjson',
          'text/csv',
        ]);
        expect(op.responses['406'], key).toBeDefined();
      }
      if (byName.q) expect(byName.q.schema, key).toMatchObject({ type: 'string', minLength: 1, maxLength: 200 });
      for (const p of params) {
        expect(p.in).toBe('query');
        expect(p.required, `${key} ${p.name}`).toBe(false);
      }
      expect(byName.limit!.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 20 });
      expect(byName.offset!.schema).toMatchObject({ type: 'integer', minimum: 0, maximum: 10000, default: 0 });
      expect((byName.offset as { description?: string }).description).toMatch(/after=<next>/);
      expect(byName.after!.schema).toMatchObject({ type: 'string', maxLength: 1024 });
      const list = op.responses['200']!.content!['application/json']!.schema as {
        required: string[];
        properties: Record<string, { description?: string }>;
      };
      expect([...list.required].sort(), key).toEqual(['items', 'limit', 'next', 'offset', 'total', 'totalExact']);
      expect(list.properties.total!.description).toMatch(/counted up to 10000/);
    }
  });

  it('declares the problem responses each route can give, as application/problem+json', () => {
    expect(doc.components.schemas.Problem).toMatchObject({
      required: expect.arrayContaining(['type', 'title', 'status', 'detail', 'code']),
    });
    for (const route of registered()) {
      const op = rawOperations.get(`${route.method} ${openApiPath(route.url)}`)!;
      // The probes answer on any host and fail only as /ready's 503.
      const probe = route.url === '/health' || route.url === '/ready';
      const expected = probe ? (route.url === '/ready' ? ['503'] : []) : ['404', '500', '503'];
      if (route.access !== 'public' && route.access !== 'optional') expected.push('401');
      if (typeof route.access === 'object') expected.push('403');
      // Every state-changing route refuses another site (403 AUTH_CROSS_SITE) and form-encoded bodies (415).
      if (!probe && route.method !== 'GET') expected.push('403', '415');
      if ('body' in route.schema && route.schema.body) expected.push('422');
      for (const status of expected) {
        const response = op.responses[status];
        expect(response, `${route.operationId} ${status}`).toBeDefined();
        expect(response!.content?.['application/problem+json']?.schema).toEqual({
          $ref: '#/components/schemas/Problem',
        });
      }
    }
  });

  it('declares the cookie and bearer security schemes and requires them exactly where the guard does', () => {
    expect(doc.components.securitySchemes.cookieAuth).toMatchObject({
      type: 'apiKey',
      in: 'cookie',
      name: 'app_session',
    });
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    for (const route of registered()) {
      const op = operations.get(`${route.method} ${openApiPath(route.url)}`)!;
      // A personal access token is accepted wherever a caller is, unless the route takes the cookie only.
      const schemes =
        'bearer' in route && route.bearer === false ? [{ cookieAuth: [] }] : [{ cookieAuth: [] }, { bearerAuth: [] }];
      if (route.access === 'public') expect(op.security ?? [], route.operationId).toEqual([]);
      else if (route.access === 'optional') expect(op.security, route.operationId).toEqual([{}, ...schemes]);
      else expect(op.security, route.operationId).toEqual(schemes);
      expect(op['x-access']).toBe(
        typeof route.access === 'object' ? `permission ${route.access.permission}` : route.access,
      );
    }
  });

  it("names every entity's read shape, create and update bodies and list page (and every command body) under components.schemas, by $ref", () => {
    const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
    const body = (key: string) => rawOperations.get(key)!.requestBody!.content['application/json']!.schema;
    const answer = (key: string, status: string) =>
      rawOperations.get(key)!.responses[status]!.content!['application/json']!.schema;
    for (const entity of app.services.registry.entities) {
      const { path, schemas } = entity.names;
      expect(raw.components.schemas[schemas.read], schemas.read).toBeDefined();
      if (entity.def.singleton) {
        expect(answer(`GET ${path}`, '200')).toEqual(ref(schemas.read));
        continue;
      }
      expect(answer(`GET ${path}`, '200'), path).toEqual(ref(schemas.page));
      expect((raw.components.schemas[schemas.page] as { properties: { items: unknown } }).properties.items).toEqual({
        type: 'array',
        items: ref(schemas.read),
      });
      expect(body(`POST ${path}`)).toEqual(ref(schemas.create));
      expect(answer(`POST ${path}`, '201')).toEqual(ref(schemas.read));
      expect(answer(`GET ${path}/{id}`, '200')).toEqual(ref(schemas.read));
      expect(body(`PATCH ${path}/{id}`)).toEqual(ref(schemas.update));
      for (const [command, definition] of Object.entries(entity.def.commands ?? {})) {
        if (definition.body)
          expect(body(`POST ${path}/{id}/${command}`), command).toEqual(ref(schemas.command(command)));
      }
    }
    expect(Object.keys(raw.components.schemas)).toEqual(
      expect.arrayContaining(['Task', 'TaskCreate', 'TaskUpdate', 'TaskPage', 'TaskAssign', 'Widget', 'WidgetPage']),
    );
    // Hand-written routes too: by their schema's title, or after their operation id.
    expect(answer('GET /api/v1/tenant/tenants', '200')).toEqual(ref('TenantPage'));
    expect(answer('POST /api/v1/auth/login', '200')).toEqual(ref('Identity'));
    expect(body('POST /api/v1/auth/login')).toEqual(ref('AuthSessionLoginRequest'));
    // No JSON body or 2xx JSON answer is left inline.
    for (const [key, op] of rawOperations) {
      const json = [
        op.requestBody?.content['application/json'],
        ...Object.entries(op.responses)
          .filter(([s]) => s.startsWith('2'))
          .map(([, r]) => r.content?.['application/json']),
      ];
      for (const media of json) if (media) expect(Object.keys(media.schema), key).toEqual(['$ref']);
    }
  });

  it('names the servers after server.public_host, the license, and the login\'s Set-Cookie; no 2xx says "Default Response"', () => {
    const served = raw as unknown as {
      servers: { url: string; variables: { host: { default: string } } }[];
      info: { license: { name: string } };
    };
    // The test configuration's public_host is a local name: http, with a {host} any tenant's host fills.
    expect(served.servers).toEqual([expect.objectContaining({ url: 'http://{host}' })]);
    expect(served.servers[0]!.variables.host.default).toMatch(new RegExp(`^${app.config.server.public_host}(:\\d+)?$`));
    expect(served.info.license.name).toBeTruthy();
    const login = rawOperations.get('POST /api/v1/auth/login')!.responses['200'] as {
      headers?: Record<string, { description: string }>;
    };
    expect(login.headers?.['Set-Cookie']?.description).toMatch(/app_session=<id>; Path=\/; HttpOnly; SameSite=Lax/);
    for (const [key, op] of rawOperations) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (status.startsWith('2')) expect(response.description, `${key} ${status}`).not.toBe('Default Response');
      }
    }
  });

  it('matches what the service answers: a problem really is application/problem+json with the Problem members', async () => {
    const res = await app.http().get('/api/v1/testkit/widgets');
    expect(res.status).toBe(401);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const required = (doc.components.schemas.Problem as { required: string[] }).required;
    for (const key of required) expect(res.body).toHaveProperty(key);
  });
});

describe('the OpenAPI document states the rules the server enforces', () => {
  type Schema = { properties: Record<string, { minLength?: number; maxLength?: number }> };
  const bodyOf = (key: string) => operations.get(key)!.requestBody!.content['application/json']!.schema as Schema;

  it('gives every new password the minimum length the password policy enforces', () => {
    expect(bodyOf('POST /api/v1/auth/password').properties.newPassword!.minLength).toBe(PASSWORD_MIN_LENGTH);
    expect(bodyOf('POST /api/v1/auth/password/reset').properties.password!.minLength).toBe(PASSWORD_MIN_LENGTH);
    expect(bodyOf('POST /api/v1/user/users/{id}/set-password').properties.password!.minLength).toBe(
      PASSWORD_MIN_LENGTH,
    );
  });

  it("documents a stream's 503 NOT_READY, which a process that is starting or shutting down answers", () => {
    const streams = [...operations.values()].filter((op) => op.responses['200']?.content?.['text/event-stream']);
    expect(streams.length).toBeGreaterThan(3);
    for (const op of streams) expect(op.responses['503']!.description, op.operationId).toMatch(/NOT_READY.*DB_BUSY/);
  });

  it('declares a download as the stored media type, not application/octet-stream', () => {
    for (const key of ['GET /api/v1/file/files/{id}/content', 'GET /api/v1/file/public/{id}']) {
      for (const status of ['200', '206']) {
        const response = operations.get(key)!.responses[status]!;
        expect(Object.keys(response.content ?? {}), `${key} ${status}`).toEqual(['*/*']);
      }
      expect(operations.get(key)!.responses['200']!.description).toMatch(/media type the file was uploaded with/);
    }
  });

  it('documents 413 and 415 on every route that reads a body, and 414 on every route with a path parameter', () => {
    for (const route of registered()) {
      const op = operations.get(`${route.method} ${openApiPath(route.url)}`)!;
      const key = `${route.method} ${route.url}`;
      const readsBody = ['POST', 'PUT', 'PATCH', 'DELETE'].includes(route.method);
      expect(op.responses['413'] !== undefined, `${key} 413`).toBe(readsBody);
      expect(op.responses['415'] !== undefined, `${key} 415`).toBe(readsBody);
      expect(op.responses['414'] !== undefined, `${key} 414`).toBe(route.url.includes('/:'));
    }
    expect(operations.get('POST /api/v1/testkit/widgets')!.responses['413']!.description).toContain(
      String(DEFAULT_BODY_LIMIT),
    );
    // What a route documents itself stays: the upload's own 413s and 422s.
    const upload = operations.get('POST /api/v1/file/files')!.responses;
    expect(upload['413']!.description).toMatch(/FILE_TOO_LARGE/);
    expect(upload['422']!.description).toMatch(/MEDIA_TYPE_INVALID/);
  });

  it('answers them as documented: a text/plain body is 415, an over-long path parameter 414', async () => {
    for (const [path, body] of [
      ['/api/v1/auth/login', '{"email":"a@example.com","password":"whatever it is"}'],
      ['/api/v1/auth/password/forgot', '{"email":"a@example.com"}'],
    ] as const) {
      const res = await app.http().post(path).set('Content-Type', 'text/plain').send(body);
      expect(res.status, path).toBe(415);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    }
    const long = await app.http().get(`/api/v1/file/public/${'a'.repeat(101)}`);
    expect(long.status).toBe(414);
    expect(long.body.code).toBe('URI_TOO_LONG');
  });
});

describe('the docs UI', () => {
  it('is served at /api/v1/docs and reads the same document', async () => {
    const page = await app.http().get('/api/v1/docs').redirects(1);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.text).toMatch(/swagger-ui/i);
    const json = await app.http().get('/api/v1/docs/json');
    expect(json.status).toBe(200);
    expect(json.body.paths).toEqual(raw.paths);
  });
});
