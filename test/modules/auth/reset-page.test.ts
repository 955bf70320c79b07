import { anonymousFormToken } from '../../../framework/access/form-token.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { mintSetPasswordToken } from '../../../modules/auth/set-password-tokens.ts';
import { addUser } from './fixtures.ts';

let app: TestApp;
let acme: TenantRef;
beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'acme');
});
afterAll(async () => {
  await app?.close();
});

/** The page for a token, as a browser gets it: the CSRF cookie it sets and the form's hidden csrf field. */
async function openResetPage(token: string): Promise<{ cookie: string; csrf: string }> {
  const res = await app.http('acme.localhost').get(`/auth/reset?token=${encodeURIComponent(token)}`);
  const line = ((res.headers['set-cookie'] as unknown as string[]) ?? []).find((c) => c.startsWith('app_csrf='))!;
  const csrf = /<input type="hidden" name="csrf" value="([^"]+)">/.exec(res.text)![1]!;
  return { cookie: line.split(';', 1)[0]!, csrf };
}

describe('GET /auth/reset', () => {
  it('shows a form carrying the token from the link that posts to the reset route', async () => {
    const res = await app.http('acme.localhost').get('/auth/reset?token=abc-DEF_123');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toMatch(/<form[^>]*method="post"[^>]*action="\/api\/v1\/auth\/password\/reset"/);
    expect(res.text).toContain('<input type="hidden" name="token" value="abc-DEF_123">');
    expect(res.text).toMatch(/<input[^>]*name="password"[^>]*type="password"/);
    // The token sits in the page address: it must not travel on as a Referer or be cached. strict-origin
    // sends the origin alone (never the path or query), so the form post still names its Origin.
    expect(res.headers['referrer-policy']).toBe('strict-origin');
    expect(res.text).toContain('<meta name="referrer" content="strict-origin">');
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('escapes the token', async () => {
    const res = await app
      .http('acme.localhost')
      .get(`/auth/reset?token=${encodeURIComponent('"><script>alert(1)</script>')}`);
    expect(res.status).toBe(200);
    expect(res.text).not.toContain('<script>alert(1)</script>');
    expect(res.text).toContain('&quot;&gt;&lt;script&gt;');
  });

  it('without a token asks for the link from the mail', async () => {
    const res = await app.http('acme.localhost').get('/auth/reset');
    expect(res.status).toBe(200);
    expect(res.text).not.toContain('<form');
  });

  it('is tenant-resolved: a host with no tenant is no site', async () => {
    const res = await app.http('nowhere.localhost').get('/auth/reset?token=x');
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('NO_SITE');
  });

  it('works without scripts: the form post itself resets the password', async () => {
    const user = await addUser(app, acme);
    const token = await app.services.transactions.run(acme, (ctx) => mintSetPasswordToken(ctx, user.id, 'reset'));
    // As a browser does: open the page (which sets the CSRF cookie), then post its form fields.
    const page = await openResetPage(token);
    const res = await app
      .http('acme.localhost')
      .post('/api/v1/auth/password/reset')
      .type('form')
      .set('Origin', 'http://acme.localhost')
      .set('Cookie', page.cookie)
      .send({ token, password: 'posted from a form', csrf: page.csrf });
    // On to the page that says it is done, with the way to sign in (issue 35, point 5).
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/auth/reset?done=1');
    const done = await app.http('acme.localhost').get(res.headers.location!);
    expect(done.status).toBe(200);
    expect(done.text).toMatch(
      /<p id="done">Your password is set\. <a href="\/admin\/login">Sign in<\/a> with it\.<\/p>/,
    );
    expect(done.text).not.toContain('<form');
    const login = await app
      .http('acme.localhost')
      .post('/api/v1/auth/login')
      .send({ email: user.email, password: 'posted from a form' });
    expect(login.status).toBe(200);
  });
});

describe('the reset form is a declared form target with a CSRF token', () => {
  it('the page sets an HttpOnly SameSite cookie and repeats its value in the hidden csrf field', async () => {
    const res = await app.http('acme.localhost').get('/auth/reset?token=abc');
    const line = (res.headers['set-cookie'] as unknown as string[]).find((c) => c.startsWith('app_csrf='))!;
    const attributes = line.split(';').map((a) => a.trim().toLowerCase());
    expect(attributes).toEqual(expect.arrayContaining(['httponly', 'samesite=lax', 'path=/']));
    const value = line.split(';', 1)[0]!.slice('app_csrf='.length);
    expect(Buffer.from(value, 'base64url')).toHaveLength(32);
    // The field is bound to the cookie's secret and the tenant, never the cookie's value itself.
    const field = anonymousFormToken(value, acme.id);
    expect(field).not.toBe(value);
    expect(res.text).toContain(`<input type="hidden" name="csrf" value="${field}">`);
    // A browser that already holds a secret keeps it, so two open forms both stay valid.
    const again = await app.http('acme.localhost').get('/auth/reset?token=abc').set('Cookie', `app_csrf=${value}`);
    expect(again.headers['set-cookie']).toBeUndefined();
    expect(again.text).toContain(`value="${field}"`);
  });

  it('a form post without the token, or with another one, is refused with 403 AUTH_CROSS_SITE and redeems nothing', async () => {
    const user = await addUser(app, acme);
    const token = await app.services.transactions.run(acme, (ctx) => mintSetPasswordToken(ctx, user.id, 'reset'));
    const page = await openResetPage(token);
    const other = await openResetPage('another');
    const attempts = [
      { cookie: page.cookie, fields: { token, password: 'forged password' } },
      { cookie: undefined, fields: { token, password: 'forged password', csrf: page.csrf } },
      { cookie: page.cookie, fields: { token, password: 'forged password', csrf: other.csrf } },
      { cookie: other.cookie, fields: { token, password: 'forged password', csrf: page.csrf } },
      { cookie: page.cookie, fields: { token, password: 'forged password', csrf: '' } },
    ];
    for (const { cookie, fields } of attempts) {
      let req = app.http('acme.localhost').post('/api/v1/auth/password/reset').type('form');
      if (cookie) req = req.set('Cookie', cookie);
      const res = await req.send(fields);
      expect(res.status, JSON.stringify({ cookie: !!cookie, fields: Object.keys(fields) })).toBe(403);
      expect(res.body.code).toBe('AUTH_CROSS_SITE');
    }
    // The set-password token is still unspent: the genuine form post works.
    const res = await app
      .http('acme.localhost')
      .post('/api/v1/auth/password/reset')
      .type('form')
      .set('Cookie', page.cookie)
      .send({ token, password: 'the real password', csrf: page.csrf });
    expect(res.status).toBe(303);
  });

  it('a JSON post needs no form token (a page of another site cannot send JSON without a preflight)', async () => {
    const user = await addUser(app, acme);
    const token = await app.services.transactions.run(acme, (ctx) => mintSetPasswordToken(ctx, user.id, 'reset'));
    const res = await app
      .http('acme.localhost')
      .post('/api/v1/auth/password/reset')
      .send({ token, password: 'sent as json' });
    expect(res.status).toBe(204);
  });
});
