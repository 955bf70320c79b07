import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { signInAs, startTestApp } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { testConfig } from '../helpers/config.ts';
import { validateConfig, ConfigError } from '../../framework/config/load.ts';

// Issue 41, point 9 (the browser's side is test/browser/cors-origins.test.ts): the installation's
// origins (server.cors_origins) and each tenant's own, set by its administrator; the answers the
// API gives their pages; never Access-Control-Allow-Credentials.

const INSTALLED = 'https://console.example.test';
const t = useTestApp({
  customers: ['acme', 'globex', 'initech'],
  config: testConfig({ server: { cors_origins: ` ${INSTALLED}/ , ${INSTALLED}` } }),
});
const SPA = 'https://app.acme.test';

const corsHeaders = (headers: Record<string, string>) =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => name.startsWith('access-control-')));

async function acmeAdmin() {
  return signInAs(t.app, t.acme, ['*']);
}

function preflight(host: string, path: string, origin: string, method: string) {
  return t.app
    .http(host)
    .options(path)
    .set('Origin', origin)
    .set('Access-Control-Request-Method', method)
    .set('Access-Control-Request-Headers', 'authorization');
}

describe('server.cors_origins', () => {
  const refusal = (cors_origins: string): string => {
    try {
      validateConfig({ server: { cors_origins } }, 'config.yaml');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    throw new Error(`accepted: ${cors_origins}`);
  };

  it('takes origins, comma-separated, and refuses a wildcard, a path or another scheme by name', () => {
    expect(
      validateConfig({ server: { cors_origins: 'https://a.test, http://localhost:5173' } }, 'c').server,
    ).toMatchObject({ cors_origins: 'https://a.test, http://localhost:5173' });
    expect(refusal('*')).toMatch(/server\.cors_origins lists origins one by one .*never \*/);
    for (const bad of ['https://a.test/app', 'ftp://a.test', 'https://user@a.test', 'a.test', 'https://a.test?x'])
      expect(refusal(`https://ok.test,${bad}`), bad).toMatch(
        /server\.cors_origins must be a comma-separated list of origins/,
      );
  });
});

describe("a tenant's own origins", () => {
  it('are set by whoever holds cors:manage, stored as a browser sends them, sorted, and read back', async () => {
    const admin = await acmeAdmin();
    const set = await t.app
      .http('acme.localhost')
      .put('/api/v1/auth/cors-origins')
      .set('Cookie', admin.cookie)
      .send({ origins: ['HTTPS://APP.ACME.TEST:443/', 'http://localhost:5173', SPA] });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body).toEqual({ origins: ['http://localhost:5173', SPA] });
    const read = await t.app.http('acme.localhost').get('/api/v1/auth/cors-origins').set('Cookie', admin.cookie);
    expect(read.body).toEqual({ origins: ['http://localhost:5173', SPA] });
    // Another tenant's list is its own.
    const other = await signInAs(t.app, t.globex, ['cors:manage']);
    expect(
      (await t.app.http('globex.localhost').get('/api/v1/auth/cors-origins').set('Cookie', other.cookie)).body,
    ).toEqual({ origins: [] });
  });

  it('refuses an entry that is no origin with 422 pointing at it, and a caller without cors:manage with 403', async () => {
    const admin = await acmeAdmin();
    const bad = await t.app
      .http('acme.localhost')
      .put('/api/v1/auth/cors-origins')
      .set('Cookie', admin.cookie)
      .send({ origins: [SPA, 'https://app.acme.test/path', '*'] });
    expect(bad.status).toBe(422);
    expect(bad.body.code).toBe('VALIDATION_FAILED');
    expect(bad.body.errors.map((e: { pointer: string }) => e.pointer)).toEqual(['/body/origins/1', '/body/origins/2']);
    const member = await signInAs(t.app, t.acme, ['task:read']);
    const forbidden = await t.app
      .http('acme.localhost')
      .put('/api/v1/auth/cors-origins')
      .set('Cookie', member.cookie)
      .send({ origins: [] });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.code).toBe('AUTH_FORBIDDEN');
  });
});

describe('the answers to a listed origin', () => {
  it('a preflight is 204 naming the origin, the path’s methods and the three headers, never credentials', async () => {
    const admin = await acmeAdmin();
    await t.app
      .http('acme.localhost')
      .put('/api/v1/auth/cors-origins')
      .set('Cookie', admin.cookie)
      .send({ origins: [SPA] });
    const item = await preflight('acme.localhost', `/api/v1/task/tasks/${crypto.randomUUID()}`, SPA, 'PATCH');
    expect(item.status).toBe(204);
    expect(corsHeaders(item.headers)).toEqual({
      'access-control-allow-origin': SPA,
      'access-control-allow-methods': 'GET, HEAD, PATCH, DELETE',
      'access-control-allow-headers': 'Authorization, Content-Type, Idempotency-Key',
      'access-control-max-age': '600',
    });
    expect(item.headers).toMatchObject({ vary: 'Origin', allow: 'GET, HEAD, PATCH, DELETE, OPTIONS' });
    // The installation's origin, at any tenant.
    const installed = await preflight('initech.localhost', '/api/v1/task/tasks', INSTALLED, 'POST');
    expect(installed.status).toBe(204);
    expect(installed.headers['access-control-allow-origin']).toBe(INSTALLED);
  });

  it('a request gets Allow-Origin and the headers it may read, its refusals too; an OPTIONS that is no preflight stays 405', async () => {
    const admin = await acmeAdmin();
    const token = (
      await t.app
        .http('acme.localhost')
        .post('/api/v1/auth/tokens')
        .set('Cookie', admin.cookie)
        .send({ name: 'spa', permissions: ['task:read'] })
    ).body.token as string;
    const ok = await t.app
      .http('acme.localhost')
      .get('/api/v1/task/tasks')
      .set('Origin', SPA)
      .set('Authorization', `Bearer ${token}`);
    expect(ok.status).toBe(200);
    expect(corsHeaders(ok.headers)).toEqual({
      'access-control-allow-origin': SPA,
      'access-control-expose-headers':
        'Location, ETag, Retry-After, X-Request-Id, Idempotent-Replayed, Content-Disposition, Content-Range',
    });
    const refused = await t.app
      .http('acme.localhost')
      .get('/api/v1/user/users')
      .set('Origin', SPA)
      .set('Authorization', `Bearer ${token}`);
    expect(refused.status).toBe(403);
    expect(refused.headers['access-control-allow-origin']).toBe(SPA);
    // A method the path does not declare, and a bare OPTIONS: the 405 they always were, no CORS header.
    const undeclared = await preflight('acme.localhost', '/api/v1/auth/me', SPA, 'DELETE');
    expect(undeclared.status).toBe(405);
    expect(corsHeaders(undeclared.headers)).toEqual({});
    const bare = await t.app.http('acme.localhost').options('/api/v1/auth/login').set('Origin', SPA);
    expect(bare.status).toBe(405);
    expect(bare.body.code).toBe('METHOD_NOT_ALLOWED');
    // Outside the API: no CORS answer at all.
    const admin_page = await t.app.http('acme.localhost').get('/admin/login').set('Origin', SPA);
    expect(corsHeaders(admin_page.headers)).toEqual({});
  });
});

describe('an answer that varies by Accept too', () => {
  it('a list’s export says Vary: Origin and Accept, Allow-Origin with it', async () => {
    const reader = await signInAs(t.app, t.initech, ['task:read']);
    for (const [asked, type] of [
      ['?format=csv', /^text\/csv/],
      ['?format=ndjson', /^application\/x-ndjson/],
    ] as const) {
      const res = await t.app
        .http('initech.localhost')
        .get(`/api/v1/task/tasks${asked}`)
        .set('Origin', INSTALLED)
        .set('Cookie', reader.cookie);
      expect(res.status, res.text).toBe(200);
      expect(res.headers['content-type']).toMatch(type);
      expect(res.headers['access-control-allow-origin']).toBe(INSTALLED);
      expect(res.headers.vary?.split(',').map((name) => name.trim())).toEqual(['Origin', 'Accept']);
    }
  });
});

describe('a public read answered from memory', () => {
  it('answers a listed origin’s revalidation with Allow-Origin too (the front door leaves it to the hook)', async () => {
    const admin = await acmeAdmin();
    const http = () => t.app.http('acme.localhost');
    const slug = `cors-${Date.now()}`;
    const made = await http()
      .post('/api/v1/content/contents')
      .set('Cookie', admin.cookie)
      .send({ slug, title: 'Public', kind: 'page', body: 'Hello' });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(
      (await http().post(`/api/v1/content/contents/${made.body.id}/publish`).set('Cookie', admin.cookie)).status,
    ).toBe(200);
    const first = await http().get(`/api/v1/content/public/${slug}`).set('Origin', SPA);
    expect(first.status).toBe(200);
    expect(first.headers['access-control-allow-origin']).toBe(SPA);
    const again = await http()
      .get(`/api/v1/content/public/${slug}`)
      .set('Origin', SPA)
      .set('If-None-Match', first.headers.etag!);
    expect(again.status).toBe(304);
    expect(again.headers['access-control-allow-origin']).toBe(SPA);
    const sameOrigin = await http().get(`/api/v1/content/public/${slug}`).set('If-None-Match', first.headers.etag!);
    expect(sameOrigin.status).toBe(304);
    expect(sameOrigin.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('says Vary: Origin on the 304 the front door answers itself, as on every API answer where origins are listed', async () => {
    const admin = await acmeAdmin();
    const slug = `vary-${Date.now()}`;
    const made = await t.app
      .http('acme.localhost')
      .post('/api/v1/content/contents')
      .set('Cookie', admin.cookie)
      .send({ slug, title: 'Public', kind: 'page', body: 'Hello' });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    await t.app
      .http('acme.localhost')
      .post(`/api/v1/content/contents/${made.body.id}/publish`)
      .set('Cookie', admin.cookie);
    // Over a socket: the front door sits in the server's request listener, which inject() never reaches.
    const server = t.app.web!.server;
    if (!server.listening) await t.app.web!.listen({ host: '127.0.0.1', port: 0 });
    const { port } = server.address() as AddressInfo;
    const get = (path: string, headers: Record<string, string>) =>
      new Promise<{ status: number; headers: Record<string, unknown> }>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers }));
        });
        req.on('error', reject);
        req.end();
      });
    // The installation lists an origin, so every API answer at any tenant says Vary: Origin.
    const path = `/api/v1/content/public/${slug}`;
    const full = await get(path, { host: 'acme.localhost' });
    expect(full.status).toBe(200);
    expect(full.headers.vary).toBe('Origin');
    // The validator cache now knows the tag: the front door answers the revalidation itself.
    const early = await get(path, { host: 'acme.localhost', 'if-none-match': String(full.headers.etag) });
    expect(early.status).toBe(304);
    expect(early.headers.vary, JSON.stringify(early.headers)).toBe('Origin');
  });
});

describe('unlisted origins and tenants that list none', () => {
  it('get no CORS header: not the tenant’s origin elsewhere, not an origin nobody lists', async () => {
    const elsewhere = await preflight('globex.localhost', '/api/v1/task/tasks', SPA, 'GET');
    expect(elsewhere.status).toBe(405);
    expect(corsHeaders(elsewhere.headers)).toEqual({});
    const stranger = await t.app.http('acme.localhost').get('/api/v1/auth/me').set('Origin', 'https://evil.test');
    expect(corsHeaders(stranger.headers)).toEqual({});
    expect(stranger.headers.vary).toBe('Origin');
  });

  it('an installation listing none and a tenant listing none answer as before: no CORS header, no Vary', async () => {
    const bare = await startTestApp({ databaseUrl: t.app.databaseUrl });
    try {
      const res = await bare.http('globex.localhost').get('/api/v1/auth/me').set('Origin', INSTALLED);
      expect(res.status).toBe(401);
      expect(corsHeaders(res.headers)).toEqual({});
      expect(res.headers.vary).toBeUndefined();
    } finally {
      await bare.close();
    }
  });
});

describe('a change of origins', () => {
  it('reaches every process at its next request (the host caches are evicted)', async () => {
    const second = await startTestApp({ databaseUrl: t.app.databaseUrl, config: t.app.config });
    try {
      const origin = 'https://later.globex.test';
      // The second process has globex cached, without the origin.
      expect((await second.http('globex.localhost').get('/api/v1/auth/me').set('Origin', origin)).status).toBe(401);
      expect((await preflight('globex.localhost', '/api/v1/task/tasks', origin, 'GET')).status).toBe(405);
      const admin = await signInAs(t.app, t.globex, ['cors:manage']);
      await t.app
        .http('globex.localhost')
        .put('/api/v1/auth/cors-origins')
        .set('Cookie', admin.cookie)
        .send({ origins: [origin] });
      const deadline = Date.now() + 5_000;
      let status = 0;
      while (Date.now() < deadline) {
        status = (
          await second
            .http('globex.localhost')
            .options('/api/v1/task/tasks')
            .set('Origin', origin)
            .set('Access-Control-Request-Method', 'GET')
        ).status;
        if (status === 204) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(status).toBe(204);
    } finally {
      await second.close();
    }
  });
});
