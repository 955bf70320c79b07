import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { THROTTLE, type AttemptKind } from '../../modules/auth/throttle.ts';

/**
 * Rules on headers: every 429 carries Retry-After; every answer of a route that is not public
 * carries Cache-Control: no-store; every answer carries X-Content-Type-Options: nosniff.
 */

let app: TestApp;
let acme: TenantRef;
let cookie: string;
const HOST = 'acme.localhost';

beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'acme');
  cookie = (await signInAs(app, acme, ['*'])).cookie;
});
afterAll(async () => {
  await app?.close();
});

/** Fills the client address's window for the kind, as that many earlier requests would have. */
async function fillWindow(kind: AttemptKind, source: string): Promise<void> {
  await app.services.transactions.run(acme, async (ctx) => {
    for (let i = 0; i < THROTTLE[kind].max; i++) await sql`insert into auth_attempts (kind, source) values (${kind}, ${source})`.execute(ctx.db);
  });
}

describe('every 429 carries Retry-After', () => {
  it('POST /api/v1/auth/password/forgot', async () => {
    await fillWindow('forgot', '203.0.113.10');
    const res = await app.http(HOST).post('/api/v1/auth/password/forgot').set('X-Forwarded-For', '203.0.113.10').send({ email: 'a@example.com' });
    expect(res.status).toBe(429);
    expect(res.body.code).toBe('RATE_LIMITED');
    expect(res.headers['retry-after']).toBe(String(THROTTLE.forgot.windowMinutes * 60));
  });

  it('POST /api/v1/auth/password/reset', async () => {
    await fillWindow('reset', '203.0.113.11');
    const res = await app.http(HOST).post('/api/v1/auth/password/reset').set('X-Forwarded-For', '203.0.113.11').send({ token: 'whatever', password: 'a long enough password' });
    expect(res.status).toBe(429);
    expect(res.body.code).toBe('RATE_LIMITED');
    expect(res.headers['retry-after']).toBe(String(THROTTLE.reset.windowMinutes * 60));
  });

  it('POST /api/v1/auth/login', async () => {
    await fillWindow('login', '203.0.113.12');
    const res = await app.http(HOST).post('/api/v1/auth/login').set('X-Forwarded-For', '203.0.113.12').send({ email: 'a@example.com', password: 'x' });
    expect(res.status).toBe(429);
    expect(res.body.code).toBe('ErrTooManyAttempts');
    expect(res.headers['retry-after']).toBe(String(THROTTLE.login.windowMinutes * 60));
  });
});

describe('every answer of a route that is not public carries Cache-Control: no-store', () => {
  it.each([
    ['GET /api/v1/auth/me', '/api/v1/auth/me'],
    ['a generated list', '/api/v1/testkit/widgets'],
    ['a generated read (404)', '/api/v1/testkit/widgets/00000000-0000-4000-8000-000000000000'],
  ])('%s, signed in', async (_name, path) => {
    const res = await app.http(HOST).get(path).set('Cookie', cookie);
    expect(res.headers['content-type']).toMatch(/json/);
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('a refusal of such a route (401 AUTH_REQUIRED)', async () => {
    const res = await app.http(HOST).get('/api/v1/auth/me');
    expect(res.status).toBe(401);
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('a validation failure of such a route (422)', async () => {
    const res = await app.http(HOST).post('/api/v1/testkit/widgets').set('Cookie', cookie).send({ name: 1 });
    expect(res.status).toBe(422);
    expect(res.headers['cache-control']).toBe('no-store');
  });
});

describe('every answer carries X-Content-Type-Options: nosniff', () => {
  it.each([
    ['a JSON answer', HOST, '/api/v1/auth/me', 200],
    ['a problem', HOST, '/api/v1/testkit/widgets?limit=0', 422],
    ['an unknown route', HOST, '/api/v1/no/such/route', 404],
    ['an unknown host (NO_SITE)', 'nowhere.localhost', '/api/v1/auth/me', 404],
    ['a probe', HOST, '/health', 200],
    ['the OpenAPI document', HOST, '/api/v1/openapi.json', 200],
    ['a static file of the API docs', HOST, '/api/v1/docs/static/index.css', 200],
  ])('%s', async (_name, host, path, status) => {
    const res = await app.http(host).get(path).set('Cookie', cookie);
    expect(res.status).toBe(status);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });
});
