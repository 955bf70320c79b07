import Type from 'typebox';
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { allModules } from '../../modules/index.ts';
import { defineModule, defineRoute } from '../../framework/entity/define.ts';
import { INTEGER_LIMIT, typeboxValidatorCompiler } from '../../framework/http/validation.ts';
import { IdParams } from '../../framework/entity/resolve.ts';

/**
 * Rule: no 500 from input. A NUL character in any string of any schema, an integer beyond what
 * the database holds, and a static file path the plugin refuses are answered as problems with
 * the client's status, never as 500.
 */

// Integers with no bound of their own, as a module author may declare them.
const unboundedModule = defineModule({
  name: 'unbounded',
  routes: [
    defineRoute({
      method: 'POST',
      url: '/api/v1/unbounded/numbers',
      operationId: 'unboundedNumbers',
      summary: 'Casts the number to a PostgreSQL integer',
      access: 'public',
      schema: {
        querystring: Type.Object(
          { skip: Type.Optional(Type.Integer()), note: Type.Optional(Type.String()) },
          { additionalProperties: false },
        ),
        body: Type.Object(
          { n: Type.Integer(), labels: Type.Optional(Type.Record(Type.String(), Type.String())) },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ n: Type.Integer() }) },
      },
      handler: async ({ tx, body }) => {
        const { rows } = await sql<{ n: number }>`select ${body.n}::int as n`.execute(tx.db);
        return { n: rows[0]!.n };
      },
    }),
  ],
});

let admin: string;
let operatorAdmin: string;
const HOST = 'inputs.localhost';

const t = useTestApp({ modules: [...allModules, testkitModule, unboundedModule] });
beforeAll(async () => {
  const tenant = await createCustomer(t.app, 'inputs');
  admin = (await signInAs(t.app, tenant, ['*'])).cookie;
  operatorAdmin = (await signInAs(t.app, t.app.operator, ['*'])).cookie;
});

type Answer = { status: number; headers: Record<string, string>; body: Record<string, unknown> };

function expectValidationFailed(res: Answer, pointer: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(422);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body.code).toBe('VALIDATION_FAILED');
  expect((res.body.errors as { pointer: string }[]).map((e) => e.pointer)).toContain(pointer);
}

describe('a NUL character (U+0000) in a string is refused with 422 VALIDATION_FAILED, whatever the schema', () => {
  it('in the login email, a public route', async () => {
    const res = await t.app.http(HOST).post('/api/v1/auth/login').send({ email: 'a\u0000@example.com', password: 'x' });
    expectValidationFailed(res, '/body/email');
  });

  it('in the forgot-password email', async () => {
    const res = await t.app.http(HOST).post('/api/v1/auth/password/forgot').send({ email: 'a\u0000@example.com' });
    expectValidationFailed(res, '/body/email');
  });

  it('in a password, which no format constrains', async () => {
    const res = await t.app
      .http(HOST)
      .post('/api/v1/auth/login')
      .send({ email: 'a@example.com', password: 'x\u0000y' });
    expectValidationFailed(res, '/body/password');
  });

  it('in displayName of an invitation and in an element of its roles[]', async () => {
    const res = await t.app
      .http(HOST)
      .post('/api/v1/user/invitations')
      .set('Cookie', admin)
      .send({ email: 'nul@example.com', displayName: 'Ada\u0000', roles: ['admin', 'x\u0000'] });
    expectValidationFailed(res, '/body/displayName');
    expectValidationFailed(res, '/body/roles/1');
  });

  it('in a tenant name', async () => {
    const res = await t.app
      .http()
      .post('/api/v1/tenant/tenants')
      .set('Cookie', operatorAdmin)
      .send({ slug: 'nul', name: 'Nul\u0000 Inc', host: 'nul.localhost' });
    expectValidationFailed(res, '/body/name');
  });

  it('in a property name', async () => {
    const res = await t.app
      .http(HOST)
      .post('/api/v1/unbounded/numbers')
      .send({ n: 1, labels: { 'a\u0000b': 'c' } });
    expectValidationFailed(res, '/body/labels/a\u0000b');
  });

  it('in a query string', async () => {
    const res = await t.app.http(HOST).post('/api/v1/unbounded/numbers?note=a%00b').send({ n: 1 });
    expectValidationFailed(res, '/querystring/note');
  });

  it('in path parameters as well (the validator of every part)', () => {
    const validate = typeboxValidatorCompiler({ schema: IdParams, httpPart: 'params', method: 'GET', url: '/x/:id' });
    const result = validate({ id: 'a\u0000b' }) as { error?: { instancePath: string; keyword: string }[] };
    expect(result.error).toEqual([expect.objectContaining({ instancePath: '/id', keyword: 'nul' })]);
  });

  it('%00 in a path never reaches a handler as NUL: the answer is a problem, not a 500', async () => {
    const res = await t.app.http(HOST).get('/api/v1/testkit/widgets/a%00b').set('Cookie', admin);
    expect(res.status).toBeLessThan(500);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  });
});

describe('an integer beyond what the database holds is refused with 422, not 500', () => {
  it('offset=9223372036854775807 on a list', async () => {
    const res = await t.app.http(HOST).get('/api/v1/testkit/widgets?offset=9223372036854775807').set('Cookie', admin);
    expectValidationFailed(res, '/querystring/offset');
  });

  it('on the tenant list too', async () => {
    const res = await t.app
      .http()
      .get('/api/v1/tenant/tenants?offset=9223372036854775807')
      .set('Cookie', operatorAdmin);
    expectValidationFailed(res, '/querystring/offset');
  });

  it(`an integer the schema leaves unbounded is kept within ±${INTEGER_LIMIT} (2^53 - 1), in the query and the body`, async () => {
    const query = await t.app
      .http(HOST)
      .post(`/api/v1/unbounded/numbers?skip=${2 ** 53}`)
      .send({ n: 1 });
    expectValidationFailed(query, '/querystring/skip');
    const above = await t.app
      .http(HOST)
      .post('/api/v1/unbounded/numbers')
      .send({ n: 2 ** 53 });
    expectValidationFailed(above, '/body/n');
    const below = await t.app
      .http(HOST)
      .post('/api/v1/unbounded/numbers')
      .send({ n: -(2 ** 53) });
    expectValidationFailed(below, '/body/n');
  });

  it('a value within that range but beyond its column is refused by the database as 422', async () => {
    const res = await t.app
      .http(HOST)
      .post('/api/v1/unbounded/numbers')
      .send({ n: 2 ** 40 });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect((await t.app.http(HOST).post('/api/v1/unbounded/numbers').send({ n: 7 })).body).toEqual({ n: 7 });
  });
});

describe('an error fastify or a plugin raised with a client status keeps it', () => {
  it('GET /api/v1/docs/static/..%5c..%5cpackage.json keeps the static plugin’s 403, as problem FORBIDDEN', async () => {
    const res = await t.app.http().get('/api/v1/docs/static/..%5c..%5cpackage.json');
    expect(res.status).toBe(403);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.code).toBe('FORBIDDEN');
    expect(res.text).not.toContain('"name": "tenantry"');
  });

  it('a missing static file is 404 ROUTE_NOT_FOUND', async () => {
    const res = await t.app.http().get('/api/v1/docs/static/no-such-file.js');
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.code).toBe('ROUTE_NOT_FOUND');
  });
});

describe('a body nested 100,000 levels deep is refused as a problem, not a 500 (the NUL walk keeps its own stack)', () => {
  const deep = (depth: number) => `${'{"a":'.repeat(depth)}"x\\u0000"${'}'.repeat(depth)}`;

  it('as the whole body of a route', async () => {
    const res = await t.app
      .http(HOST)
      .post('/api/v1/auth/login')
      .set('Content-Type', 'application/json')
      .send(`{"email":${deep(100_000)},"password":"x"}`);
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body.code).toBe('VALIDATION_FAILED');
  });

  it('nulIssues walks 100,000 levels and still names the NUL it finds, in document order', async () => {
    const { nulIssues } = await import('../../framework/http/validation.ts');
    const issues = nulIssues(JSON.parse(deep(100_000)));
    expect(issues).toHaveLength(1);
    expect(issues[0]!.instancePath).toBe('/a'.repeat(100_000));
    expect(nulIssues({ 'k\u0000': ['a', 'b\u0000'], z: 'c\u0000' }).map((i) => i.instancePath)).toEqual([
      '/k\u0000',
      '/k\u0000/1',
      '/z',
    ]);
  });

  it('a keyword that compares items deeply (uniqueItems) refuses a 100,000-deep item as invalid instead of throwing', () => {
    const validate = typeboxValidatorCompiler({
      schema: Type.Array(Type.String(), { uniqueItems: true, maxItems: 10 }),
      httpPart: 'body',
      method: 'POST',
      url: '/x',
    }) as (value: unknown) => { value?: unknown; error?: unknown };
    const nested = JSON.parse(`[${'['.repeat(100_000)}${']'.repeat(100_000)}, 1]`);
    const result = validate(nested);
    expect(result.error).toBeDefined();
    expect(validate(['a', 'b'])).toEqual({ value: ['a', 'b'] });
  });
});
