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

describe('GET /auth/reset', () => {
  it('shows a form carrying the token from the link that posts to the reset route', async () => {
    const res = await app.http('acme.localhost').get('/auth/reset?token=abc-DEF_123');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toMatch(/<form[^>]*method="post"[^>]*action="\/api\/v1\/auth\/password\/reset"/);
    expect(res.text).toContain('<input type="hidden" name="token" value="abc-DEF_123">');
    expect(res.text).toMatch(/<input[^>]*name="password"[^>]*type="password"/);
    // The token sits in the page address: it must not travel on as a Referer or be cached.
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('escapes the token', async () => {
    const res = await app.http('acme.localhost').get(`/auth/reset?token=${encodeURIComponent('"><script>alert(1)</script>')}`);
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
    const res = await app.http('acme.localhost').post('/api/v1/auth/password/reset').type('form').set('Origin', 'http://acme.localhost').send({ token, password: 'posted from a form' });
    expect(res.status).toBe(204);
    const login = await app.http('acme.localhost').post('/api/v1/auth/login').send({ email: user.email, password: 'posted from a form' });
    expect(login.status).toBe(200);
  });
});
