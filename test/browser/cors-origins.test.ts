import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, type TestAppOptions } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { addUser, sessionCookieOf } from '../modules/auth/fixtures.ts';
import { hasChromium, useBrowserApp, warnNoChromium } from './admin-pages-setup.ts';

// Issue 41, point 9: a single-page app served from another origin calls the API with a personal
// access token, when the installation or the tenant lists its origin; a cookie never works across
// origins. Chromium maps every name to 127.0.0.1: the API listens on one loopback port, the pages
// on another, so `acme.localhost:<pages>` is another origin of the same site as the API's
// `acme.localhost:<api>` (its cookies travel), and `spa.localhost:<pages>` another site.

warnNoChromium('cross-origin clients with personal access tokens');

/** The second origin's server: a blank page at every path, from which each test runs its fetches. */
let pages: Server;
let pagesPort = 0;
const options: TestAppOptions = {};
beforeAll(async () => {
  if (!hasChromium) return;
  pages = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><title>SPA</title>'),
  );
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  pagesPort = (pages.address() as AddressInfo).port;
  // The installation lists one origin for every tenant.
  options.config = testConfig({ server: { cors_origins: `http://installed.localhost:${pagesPort}` } });
});
afterAll(async () => {
  await new Promise((resolve) => (pages ? pages.close(resolve) : resolve(undefined)));
});
const b = useBrowserApp(options);

const pageOrigin = (host: string) => `http://${host}:${pagesPort}`;

/** What the API received, as it arrived: method, path, Origin and whether a cookie and a token came. */
const received: { method: string; url: string; origin?: string; cookie: boolean; bearer: boolean; status: number }[] =
  [];

let acme: TenantRef;
let globex: TenantRef;
let admin: { id: string; email: string; password: string; cookie: string };
let token: string;
let context: BrowserContext;

beforeAll(async () => {
  if (!hasChromium) return;
  acme = await createCustomer(b.app, 'acme');
  globex = await createCustomer(b.app, 'globex');
  const person = await addUser(b.app, acme, { roles: ['admin'], password: 'admin password here' });
  const login = await b.app
    .http('acme.localhost')
    .post('/api/v1/auth/login')
    .send({ email: person.email, password: person.password });
  admin = { ...person, cookie: sessionCookieOf(login)! };
  const made = await b.app
    .http('acme.localhost')
    .post('/api/v1/auth/tokens')
    .set('Cookie', admin.cookie)
    .send({ name: 'spa', permissions: ['task:read', 'task:update'] });
  expect(made.status).toBe(201);
  token = made.body.token;
  b.app.web!.server.prependListener('request', (req, res) => {
    const entry = {
      method: req.method ?? '',
      url: req.url ?? '',
      ...(req.headers.origin ? { origin: req.headers.origin } : {}),
      cookie: req.headers.cookie !== undefined,
      bearer: req.headers.authorization !== undefined,
      status: 0,
    };
    received.push(entry);
    res.on('finish', () => {
      entry.status = res.statusCode;
    });
  });
  context = await b.browser.newContext();
});
afterAll(async () => {
  await context?.close();
});

/** Opens the blank page of an origin of the pages' server. */
async function pageAt(origin: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${origin}/`);
  return page;
}

interface Outcome {
  ok: boolean;
  status?: number;
  body?: unknown;
  location?: string | null;
  error?: string;
}

/** A fetch from the page to the API: what the page may read of the answer, or the browser's refusal. */
function call(
  page: Page,
  url: string,
  init: {
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    credentials?: 'include' | 'omit' | 'same-origin';
  },
): Promise<Outcome> {
  return page.evaluate(
    async ({ url, init }) => {
      try {
        const res = await fetch(url, init);
        const text = await res.text();
        return {
          ok: true,
          status: res.status,
          body: text ? JSON.parse(text) : null,
          location: res.headers.get('location'),
        };
      } catch (err) {
        return { ok: false, error: String(err) };
      }
    },
    { url, init },
  );
}

const api = (host: string) => b.origin(host);
const task = (title: string) =>
  JSON.stringify({ title, priority: 'low', deadline: new Date(Date.now() + 86_400_000).toISOString() });

describe.skipIf(!hasChromium)('cross-origin pages calling the API with a personal access token', () => {
  it("a tenant's listed origin reads and writes with its token: the preflight is answered, never with credentials", async () => {
    const spa = pageOrigin('acme.localhost');
    const set = await b.app
      .http('acme.localhost')
      .put('/api/v1/auth/cors-origins')
      .set('Cookie', admin.cookie)
      .send({ origins: [`${spa.toUpperCase()}/`] });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body).toEqual({ origins: [spa] });

    const page = await pageAt(spa);
    const listed = await call(page, `${api('acme.localhost')}/api/v1/task/tasks`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(listed).toMatchObject({ ok: true, status: 200, body: { items: expect.any(Array) } });
    const created = await call(page, `${api('acme.localhost')}/api/v1/task/tasks`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'idempotency-key': `spa-${Date.now()}`,
      },
      body: task('Made by a page of another origin'),
    });
    expect(created).toMatchObject({ ok: true, status: 201, body: { title: 'Made by a page of another origin' } });
    // The answer's Location is exposed to the page.
    expect(created.location).toMatch(/^\/api\/v1\/task\/tasks\//);

    const preflight = await b.app
      .http('acme.localhost')
      .options('/api/v1/task/tasks')
      .set('Origin', spa)
      .set('Access-Control-Request-Method', 'POST')
      .set('Access-Control-Request-Headers', 'authorization, content-type, idempotency-key');
    expect(preflight.status).toBe(204);
    expect(preflight.headers).toMatchObject({
      'access-control-allow-origin': spa,
      'access-control-allow-methods': 'GET, HEAD, POST',
      'access-control-allow-headers': 'Authorization, Content-Type, Idempotency-Key',
      vary: 'Origin',
    });
    expect(preflight.headers['access-control-allow-credentials']).toBeUndefined();
    // A refusal reaches the page too, with its problem document.
    const refused = await call(page, `${api('acme.localhost')}/api/v1/user/users`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(refused).toMatchObject({ ok: true, status: 403, body: { code: 'AUTH_FORBIDDEN' } });
    await page.close();
  });

  it('an origin nobody lists is refused by the browser: its preflight gets no CORS header, its request never leaves', async () => {
    const stranger = pageOrigin('spa.localhost');
    const page = await pageAt(stranger);
    const before = received.length;
    const outcome = await call(page, `${api('acme.localhost')}/api/v1/task/tasks`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(outcome.ok).toBe(false);
    const arrived = received.slice(before).filter((r) => r.origin === stranger);
    expect(arrived.map((r) => `${r.method} ${r.status}`)).toEqual(['OPTIONS 405']);
    expect(arrived.some((r) => r.bearer)).toBe(false);
    const preflight = await b.app
      .http('acme.localhost')
      .options('/api/v1/task/tasks')
      .set('Origin', stranger)
      .set('Access-Control-Request-Method', 'GET')
      .set('Access-Control-Request-Headers', 'authorization');
    expect(preflight.status).toBe(405);
    expect(Object.keys(preflight.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    // A simple GET (no preflight) is answered, but with no CORS header the page cannot read it.
    const simple = await b.app.http('acme.localhost').get('/api/v1/task/tasks').set('Origin', stranger);
    expect(simple.headers['access-control-allow-origin']).toBeUndefined();
    await page.close();
  });

  it("a tenant's origin counts at that tenant only; the installation's at every tenant", async () => {
    const acmeOnly = await pageAt(pageOrigin('acme.localhost'));
    const globexToken = await (async () => {
      const person = await addUser(b.app, globex, { roles: ['admin'], password: 'globex password here' });
      const login = await b.app
        .http('globex.localhost')
        .post('/api/v1/auth/login')
        .send({ email: person.email, password: person.password });
      const made = await b.app
        .http('globex.localhost')
        .post('/api/v1/auth/tokens')
        .set('Cookie', sessionCookieOf(login)!)
        .send({ name: 'spa', permissions: ['task:read'] });
      return made.body.token as string;
    })();
    const atGlobex = await call(acmeOnly, `${api('globex.localhost')}/api/v1/task/tasks`, {
      headers: { authorization: `Bearer ${globexToken}` },
    });
    expect(atGlobex.ok).toBe(false);
    await acmeOnly.close();

    const installed = await pageAt(pageOrigin('installed.localhost'));
    for (const [host, bearer] of [
      ['acme.localhost', token],
      ['globex.localhost', globexToken],
    ] as const) {
      const outcome = await call(installed, `${api(host)}/api/v1/task/tasks`, {
        headers: { authorization: `Bearer ${bearer}` },
      });
      expect(outcome, host).toMatchObject({ ok: true, status: 200 });
    }
    await installed.close();
  });

  it('a cookie never works across origins: the browser refuses to read it, and the cross-site rule refuses its writes', async () => {
    // The browser holds the administrator's session for acme.localhost; the page is another
    // origin of the same site (another port), listed, so the cookie travels with its requests.
    await context.addCookies([
      { name: admin.cookie.split('=')[0]!, value: admin.cookie.split('=')[1]!, url: api('acme.localhost') },
    ]);
    const spa = pageOrigin('acme.localhost');
    const page = await pageAt(spa);
    const before = received.length;
    // A read with the cookie: the service answers, but without Allow-Credentials the page gets nothing.
    const me = await call(page, `${api('acme.localhost')}/api/v1/auth/me`, { credentials: 'include' });
    expect(me.ok).toBe(false);
    // A JSON write with the cookie: the preflight carries no Allow-Credentials, so it never leaves.
    const json = await call(page, `${api('acme.localhost')}/api/v1/task/tasks`, {
      method: 'POST',
      credentials: 'include',
      headers: { 'content-type': 'application/json' },
      body: task('Made with a cookie from another origin'),
    });
    expect(json.ok).toBe(false);
    // A write that needs no preflight (a no-cors text post) does leave, cookie and all: 403 AUTH_CROSS_SITE.
    await page.evaluate(
      async (url) => {
        await fetch(url, { method: 'POST', mode: 'no-cors', credentials: 'include', body: 'x' });
      },
      `${api('acme.localhost')}/api/v1/task/tasks`,
    );
    const arrived = received.slice(before).filter((r) => r.origin === spa);
    expect(arrived.find((r) => r.method === 'GET' && r.url === '/api/v1/auth/me')).toMatchObject({
      cookie: true,
      status: 200,
    });
    expect(arrived.filter((r) => r.method === 'POST').map((r) => ({ cookie: r.cookie, status: r.status }))).toEqual([
      { cookie: true, status: 403 },
    ]);
    const titles = await b.app.services.transactions.run(acme, async (ctx) =>
      (await ctx.db.selectFrom('tasks').select('title').execute()).map((r) => r.title),
    );
    expect(titles).not.toContain('Made with a cookie from another origin');
    await page.close();
  });
});
