import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import type { Browser, BrowserContext, Page, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, startTestApp, type TestApp } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { mintSetPasswordToken } from '../../modules/auth/set-password-tokens.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import { CHROMIUM, closeContexts, workerChromium } from '../helpers/chromium.ts';

// Two tenants of one site: acme.example.com and evil.example.com share the registrable domain
// example.com, so a SameSite=Lax cookie of acme is sent with a form post from a page on evil.
// Chromium resolves every name to this machine; the service and the attacker's page each listen
// on a port of their own.

let app: TestApp;
let acme: TenantRef;
let browser: Browser;
let attacker: Server;
let acmeOrigin: string;
let evilOrigin: string;
let admin: { id: string; email: string; password: string };
let victim: { id: string; email: string; password: string };
/** The attack page the evil host serves next. */
let attackPage = '';
/** What the service received: each POST's path, Origin and Cookie headers. */
const received: { url: string; origin: string | undefined; cookie: string | undefined; answer: string }[] = [];

beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'acme', 'acme.example.com');
  await createCustomer(app, 'evil', 'evil.example.com');
  admin = await addUser(app, acme, { roles: ['admin'], password: 'admin password here' });
  victim = await addUser(app, acme, { password: 'victim password here' });

  // A passive listener beside fastify's own: it sees each request exactly as it arrived.
  app.web!.server.prependListener('request', (req, res) => {
    if (req.method !== 'POST') return;
    const entry: (typeof received)[number] = {
      url: req.url ?? '',
      origin: req.headers.origin,
      cookie: req.headers.cookie,
      answer: '',
    };
    received.push(entry);
    // An opaque (no-cors) answer is hidden from the page and from the browser's tooling: keep a copy.
    const end = res.end.bind(res) as (...args: unknown[]) => typeof res;
    res.end = ((...args: unknown[]) => {
      if (typeof args[0] === 'string' || Buffer.isBuffer(args[0])) entry.answer = String(args[0]);
      return end(...args);
    }) as typeof res.end;
  });
  await app.web!.listen({ host: '127.0.0.1', port: 0 });
  acmeOrigin = `http://acme.example.com:${(app.web!.server.address() as AddressInfo).port}`;
  attacker = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(attackPage),
  );
  await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
  evilOrigin = `http://evil.example.com:${(attacker.address() as AddressInfo).port}`;

  if (!existsSync(CHROMIUM))
    throw new Error(`These tests drive Chromium at ${CHROMIUM}: apt-get install chromium (.ci/run does it as root)`);
  browser = await workerChromium();
});
afterAll(async () => {
  if (browser) await closeContexts(browser);
  await new Promise((resolve) => (attacker ? attacker.close(resolve) : resolve(undefined)));
  await app?.close();
});

/** A browser context in which the administrator signed in on acme, as a person would. */
async function adminSignedIn(): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${acmeOrigin}/auth/reset`);
  const status = await page.evaluate(async ({ email, password }) => {
    const res = await fetch('/api/v1/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      credentials: 'same-origin',
      body: JSON.stringify({ email, password }),
    });
    return res.status;
  }, admin);
  expect(status).toBe(200);
  const cookies = await context.cookies(acmeOrigin);
  expect(cookies.find((c) => c.name === 'app_session')).toMatchObject({ sameSite: 'Lax', httpOnly: true });
  return { context, page };
}

async function acmeState() {
  return app.services.transactions.run(acme, async (ctx) => ({
    users: (
      await sql<{
        email: string;
        status: string;
        roles: string[];
      }>`select email, status, roles from users order by email`.execute(ctx.db)
    ).rows,
    events: (
      await sql<{ name: string }>`select name from outbox where name <> 'auth.logged_in' order by id`.execute(ctx.db)
    ).rows,
  }));
}

/** Serves the attack page on evil, opens it, and returns the answer acme gave to the forged request. */
async function attack(page: Page, html: string, target: string): Promise<Response> {
  attackPage = html;
  const answered = page.waitForResponse(
    (res) => res.url() === `${acmeOrigin}${target}` && res.request().method() === 'POST',
  );
  await page.goto(`${evilOrigin}/`);
  return answered;
}

async function expectRefused(response: Response, target: string): Promise<void> {
  expect(response.status()).toBe(403);
  // The cookie did travel with the forged request, as the service received it: only the
  // cross-site rule stands in the way.
  const seen = received.filter((r) => r.url === target).at(-1);
  expect(seen?.origin).toBe(evilOrigin);
  expect(seen?.cookie ?? '').toMatch(/(^|;\s*)app_session=/);
  expect(JSON.parse(seen!.answer)).toMatchObject({ code: 'AUTH_CROSS_SITE', status: 403 });
}

describe('in Chromium, a page on another host of the same site cannot write through the admin’s cookie', () => {
  it('an auto-submitted form post to POST /api/v1/user/invitations gets 403 AUTH_CROSS_SITE and invites nobody', async () => {
    const { context, page } = await adminSignedIn();
    try {
      const before = await acmeState();
      const response = await attack(
        page,
        `<!doctype html><form id="f" method="post" action="${acmeOrigin}/api/v1/user/invitations">
           <input name="email" value="mallory@evil.test"><input name="displayName" value="Mallory">
         </form><script>document.getElementById('f').submit()</script>`,
        '/api/v1/user/invitations',
      );
      await expectRefused(response, '/api/v1/user/invitations');
      expect(await acmeState()).toEqual(before);
    } finally {
      await context.close();
    }
  });

  it('a credentialed fetch to a user command (set-password, deactivate) gets 403 AUTH_CROSS_SITE and changes nothing', async () => {
    const { context, page } = await adminSignedIn();
    try {
      const before = await acmeState();
      for (const [command, contentType, body] of [
        ['set-password', 'application/x-www-form-urlencoded', 'password=chosen+by+the+attacker'],
        ['deactivate', 'application/x-www-form-urlencoded', ''],
      ] as const) {
        const target = `/api/v1/user/users/${victim.id}/${command}`;
        const response = await attack(
          page,
          `<!doctype html><script>
             fetch(${JSON.stringify(acmeOrigin + target)}, { method: 'POST', mode: 'no-cors', credentials: 'include',
               headers: { 'content-type': ${JSON.stringify(contentType)} }, body: ${JSON.stringify(body)} });
           </script>`,
          target,
        );
        await expectRefused(response, target);
      }
      expect(await acmeState()).toEqual(before);
      // The victim's password is the one they chose.
      const login = await app
        .http('acme.example.com')
        .post('/api/v1/auth/login')
        .send({ email: victim.email, password: victim.password });
      expect(login.status).toBe(200);
    } finally {
      await context.close();
    }
  });

  it('the same signed-in browser writes from acme’s own pages (the refusal is about the origin, not the session)', async () => {
    const { context, page } = await adminSignedIn();
    try {
      const status = await page.evaluate(async () => {
        const res = await fetch('/api/v1/user/invitations', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          credentials: 'same-origin',
          body: JSON.stringify({ email: 'colleague@acme.test', displayName: 'Colleague' }),
        });
        return res.status;
      });
      expect(status).toBe(201);
      expect((await acmeState()).users.map((u) => u.email)).toContain('colleague@acme.test');
    } finally {
      await context.close();
    }
  });

  it('the reset page’s form, posted without scripts, carries its CSRF token and sets the password', async () => {
    const person = await addUser(app, acme, { password: 'before the reset' });
    const token = await app.services.transactions.run(acme, (ctx) => mintSetPasswordToken(ctx, person.id, 'reset'));
    const context = await browser.newContext({ javaScriptEnabled: false });
    try {
      const page = await context.newPage();
      await page.goto(`${acmeOrigin}/auth/reset?token=${encodeURIComponent(token)}`);
      await page.fill('#password', 'set in a real browser');
      const answered = page.waitForResponse((res) => res.url() === `${acmeOrigin}/api/v1/auth/password/reset`);
      await page.click('button[type=submit]');
      const response = await answered;
      // A form post goes on to the page that says it is done and links to the sign-in page.
      expect(response.status()).toBe(303);
      await page.waitForURL(`${acmeOrigin}/auth/reset?done=1`);
      expect(await page.getByRole('link', { name: 'Sign in' }).getAttribute('href')).toBe('/admin/login');
      const sent = response.request().postData() ?? '';
      expect(new URLSearchParams(sent).get('csrf')).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const login = await app
        .http('acme.example.com')
        .post('/api/v1/auth/login')
        .send({ email: person.email, password: 'set in a real browser' });
      expect(login.status).toBe(200);
    } finally {
      await context.close();
    }
  });
});
