import { beforeAll, describe, expect, it } from 'vitest';
import { signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';

/**
 * Rule (docs/api-conventions.md): an unknown query parameter is refused with 422
 * VALIDATION_FAILED. An API route that declares no query string takes none, so any parameter is
 * unknown there: `?format=csv` on a route that cannot export is refused, never answered as JSON.
 * The probes and pages outside /api/ keep what they declare.
 */
const t = useTestApp({ customers: ['noquery'] });
const HOST = 'noquery.localhost';
let cookie: string;

beforeAll(async () => {
  cookie = (await signInAs(t.app, t.noquery, ['*'])).cookie;
});

const get = (path: string) => t.app.http(HOST).get(path).set('Cookie', cookie);

describe('an API route that declares no query string', () => {
  it.each(['/api/v1/auth/me?anything=1', '/api/v1/webhook/events?format=csv', '/api/v1/billing/entitlements?x='])(
    'refuses %s with 422 VALIDATION_FAILED, as a problem document',
    async (path) => {
      const res = await get(path);
      expect(res.status, JSON.stringify(res.body)).toBe(422);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.code).toBe('VALIDATION_FAILED');
    },
  );

  it('answers as before without one', async () => {
    for (const path of ['/api/v1/auth/me', '/api/v1/webhook/events', '/api/v1/billing/entitlements'])
      expect((await get(path)).status, path).toBe(200);
  });

  it('documents the 422 in the OpenAPI, as every other API route does', async () => {
    const doc = (await t.app.http().get('/api/v1/openapi.json')).body as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    };
    for (const [path, methods] of Object.entries(doc.paths)) {
      if (!path.startsWith('/api/')) continue;
      for (const [method, op] of Object.entries(methods))
        expect(Object.keys(op.responses), `${method} ${path}`).toContain('422');
    }
  });

  it('leaves the probes outside /api/ as they are', async () => {
    expect((await t.app.http().get('/health?probe=1')).status).toBe(200);
  });
});
