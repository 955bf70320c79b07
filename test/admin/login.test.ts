import { anonymousFormToken } from '../../framework/access/form-token.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, startTestApp, type TestApp } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { addUser } from '../modules/auth/fixtures.ts';

let app: TestApp;
let acme: TenantRef;
let person: { id: string; email: string; password: string };
const HOST = 'acme.localhost';
// The browser's pre-session secret (the app_csrf cookie); the form's field is derived from it.
const SECRET = 'L'.repeat(43);

beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'acme', HOST);
  person = await addUser(app, acme, { roles: ['admin'], password: 'a long enough password' });
});
afterAll(async () => {
  await app?.close();
});

/** Posts the sign-in form as a browser would, with the page's CSRF token. */
function postForm(fields: Record<string, string>, next?: string) {
  const action = next === undefined ? '/api/v1/auth/login' : `/api/v1/auth/login?next=${encodeURIComponent(next)}`;
  return app
    .http(HOST)
    .post(action)
    .set('Cookie', `app_csrf=${SECRET}`)
    .type('form')
    .send({ csrf: anonymousFormToken(SECRET, acme.id), ...fields });
}

describe('Admin login: /admin/login is a public sign-in form that works without JavaScript', () => {
  it('renders a form posting to /admin/login with the next path and a CSRF token', async () => {
    const res = await app.http(HOST).get('/admin/login?next=%2Fadmin%2Ftask%2Ftasks%3Fsort%3Dtitle');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('action="/admin/login?next=%2Fadmin%2Ftask%2Ftasks%3Fsort%3Dtitle"');
    const token = /name="csrf" value="([A-Za-z0-9_-]{43})"/.exec(res.text)?.[1];
    const secret = /^app_csrf=([^;]+)/.exec(res.headers['set-cookie']?.[0] ?? '')?.[1];
    expect(token).toBe(anonymousFormToken(secret!, acme.id));
    expect(res.text).toMatch(/<input type="email" id="login-email" name="email"/);
    expect(res.text).toMatch(/<input type="password" id="login-password" name="password"/);
    expect(res.text).not.toContain('Sign in with SSO');
  });

  it('signs in from the form post and goes to the local path in next (303)', async () => {
    const res = await postForm({ email: person.email, password: person.password }, '/admin/task/tasks?sort=title');
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/admin/task/tasks?sort=title');
    expect(String(res.headers['set-cookie'])).toMatch(/app_session=/);
  });

  it('refuses an open redirect: //x, /\\x, a scheme, control characters and no next all land on /admin', async () => {
    for (const next of [
      '//evil.example',
      'https://evil.example',
      '/\\evil.example',
      '/\\/evil.example',
      '/ok\u0001x',
      'evil.example',
      undefined,
    ]) {
      const res = await postForm({ email: person.email, password: person.password }, next);
      expect(res.status, String(next)).toBe(303);
      expect(res.headers.location, String(next)).toBe('/admin');
    }
  });

  it('re-renders the form with one message for a wrong password and an unknown address alike (no enumeration)', async () => {
    const wrong = await postForm({ email: person.email, password: 'not the password' }, '/admin/x');
    const unknown = await postForm({ email: 'nobody@example.test', password: 'not the password' }, '/admin/x');
    for (const res of [wrong, unknown]) {
      expect(res.status).toBe(401);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text.split('The address or the password is wrong.').length - 1).toBe(1);
      expect(res.text).toContain('action="/admin/login?next=%2Fadmin%2Fx"');
      expect(res.text).not.toContain('not the password');
    }
    const strip = (html: string) => html.replace(/value="[^"]*"/g, '');
    expect(strip(wrong.text)).toBe(strip(unknown.text));
  });

  it('takes the form at /admin/login itself: a refusal is the page again at that address, its message said once', async () => {
    const post = (fields: Record<string, string>) =>
      app
        .http(HOST)
        .post('/admin/login?next=%2Fadmin%2Fx')
        .set('Cookie', `app_csrf=${SECRET}`)
        .type('form')
        .send({ csrf: anonymousFormToken(SECRET, acme.id), ...fields });
    const signedIn = await post({ email: person.email, password: person.password });
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.location).toBe('/admin/x');
    expect(String(signedIn.headers['set-cookie'])).toMatch(/app_session=/);
    // A wrong password, and a body outside the login route's schema (a password past its length), alike.
    for (const fields of [
      { email: person.email, password: 'not the password' },
      { email: person.email, password: 'x'.repeat(5000) },
    ]) {
      const refused = await post(fields);
      expect(refused.status).toBe(401);
      expect(refused.headers['content-type']).toMatch(/^text\/html/);
      expect(refused.headers.location).toBeUndefined();
      expect(refused.text.split('The address or the password is wrong.').length - 1).toBe(1);
      expect(refused.text).toContain('action="/admin/login?next=%2Fadmin%2Fx"');
      expect(refused.text).toContain(`value="${person.email}"`);
    }
    const noToken = await app
      .http(HOST)
      .post('/admin/login')
      .type('form')
      .send({ email: person.email, password: person.password });
    expect(noToken.status).toBe(403);
  });

  it('a page past the 2000 characters next may hold: the sign-in page still opens, its form works, and lands on /admin', async () => {
    // A signed-out browser asking for a long address is sent to the sign-in page, which must open
    // (the next it is given falls back to /admin, as docs/auth.md says), not refuse the link.
    const long = `/admin/task/tasks?q=${'a'.repeat(2100)}`;
    const sent = await app.http(HOST).get(long);
    expect(sent.status).toBe(303);
    const login = String(sent.headers.location);
    expect(login.startsWith('/admin/login')).toBe(true);
    const page = await app.http(HOST).get(login);
    expect(page.status).toBe(200);
    expect(page.text).toMatch(/<input type="password" id="login-password" name="password"/);
    // A next over the limit given in a link: the form, posting to /admin afterwards.
    const given = await app.http(HOST).get(`/admin/login?next=${encodeURIComponent(`/admin/${'x'.repeat(2000)}`)}`);
    expect(given.status).toBe(200);
    expect(given.text).toContain('action="/admin/login?next=%2Fadmin"');
    // A next within the limit that its percent-encoding takes past it (700 × "€", 6300 characters
    // encoded): the form's own action must be one the post accepts, so signing in works.
    const euros = `/admin/${'€'.repeat(700)}`;
    const wide = await app.http(HOST).get(`/admin/login?next=${encodeURIComponent(euros)}`);
    expect(wide.status).toBe(200);
    const action = /action="([^"]+)"/.exec(wide.text)?.[1]?.replaceAll('&amp;', '&');
    const signedIn = await app
      .http(HOST)
      .post(action!)
      .set('Cookie', `app_csrf=${SECRET}`)
      .type('form')
      .send({ csrf: anonymousFormToken(SECRET, acme.id), email: person.email, password: person.password });
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.location).toBe('/admin');
  });

  it('refuses a form post without the CSRF token, and one from another site', async () => {
    const noToken = await app
      .http(HOST)
      .post('/api/v1/auth/login')
      .type('form')
      .send({ email: person.email, password: person.password });
    expect(noToken.status).toBe(403);
    expect(noToken.body.code).toBe('AUTH_CROSS_SITE');
    const crossSite = await postForm({ email: person.email, password: person.password }).set(
      'Sec-Fetch-Site',
      'cross-site',
    );
    expect(crossSite.status).toBe(403);
  });

  it('keeps the JSON API unchanged: JSON in, Identity out, next ignored', async () => {
    const res = await app
      .http(HOST)
      .post('/api/v1/auth/login?next=/admin/x')
      .send({ email: person.email, password: person.password });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.stringify(res.body)).toContain(person.id);
    expect(res.headers.location).toBeUndefined();
  });
});

describe('Admin login: with single sign-on configured the page offers it', () => {
  it('shows a "Sign in with SSO" button starting the flow with the same next', async () => {
    const sso = await startTestApp({
      config: testConfig(
        { auth: { oidc: { issuer: 'https://id.example.com', client_id: 'app' } } },
        { TENANTRY_AUTH_OIDC_CLIENT_SECRET: 'secret' },
      ),
    });
    try {
      const res = await sso.http().get('/admin/login?next=%2Fadmin%2Fuser%2Fusers');
      expect(res.text).toContain('Sign in with SSO');
      expect(res.text).toContain('href="/api/v1/auth/oidc/start?next=%2Fadmin%2Fuser%2Fusers"');
    } finally {
      await sso.close();
    }
  });
});
