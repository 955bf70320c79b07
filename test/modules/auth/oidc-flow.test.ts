import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import { testConfig } from '../../helpers/config.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { startTestIssuer, visitIssuer, type TestIssuer } from './oidc-issuer.ts';
import { openState, sealState, stateKey } from '../../../modules/auth/oidc/state-cookie.ts';

// Single sign-on (SPEC: Authentication → Single sign-on; Sign-in rule 6) driven end to end over
// HTTP against a real oidc-provider: the app's start route, the issuer's authorization endpoint
// and interaction, the app's callback, and the session it opens.

const CLIENT_ID = 'tenantry-test';
const CLIENT_SECRET = 'a-client-secret-only-the-test-knows';
const CALLBACK = '/api/v1/auth/oidc/callback';

let issuer: TestIssuer;
let app: TestApp;
let acme: TenantRef;
let globex: TenantRef;

beforeAll(async () => {
  issuer = await startTestIssuer({
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    redirectUris: [`http://acme.localhost${CALLBACK}`, `http://globex.localhost${CALLBACK}`],
  });
  app = await startTestApp({
    config: testConfig(
      { auth: { oidc: { issuer: issuer.url, client_id: CLIENT_ID } } },
      { TENANTRY_AUTH_OIDC_CLIENT_SECRET: CLIENT_SECRET },
    ),
  });
  acme = await createCustomer(app, 'acme');
  globex = await createCustomer(app, 'globex');
});

afterAll(async () => {
  await app?.close();
  await issuer?.close();
});

interface Started {
  location: URL;
  stateCookie: string;
  setCookie: string;
}

const setCookies = (res: { headers: Record<string, unknown> }): string[] =>
  (res.headers['set-cookie'] as string[] | undefined) ?? [];
const cookieNamed = (res: { headers: Record<string, unknown> }, name: string): string | undefined =>
  setCookies(res).find((c) => c.startsWith(`${name}=`));
const cookiePair = (setCookie: string): string => setCookie.split(';', 1)[0]!;
const clearsState = (res: { headers: Record<string, unknown> }): boolean =>
  /^app_oidc=;.*Expires=Thu, 01 Jan 1970/i.test(cookieNamed(res, 'app_oidc') ?? '');

async function start(host: string, next?: string): Promise<Started> {
  const res = await app
    .http(host)
    .get(`/api/v1/auth/oidc/start${next === undefined ? '' : `?next=${encodeURIComponent(next)}`}`);
  expect(res.status, JSON.stringify(res.body)).toBe(302);
  const setCookie = cookieNamed(res, 'app_oidc');
  expect(setCookie).toBeDefined();
  return { location: new URL(res.headers.location!), stateCookie: cookiePair(setCookie!), setCookie: setCookie! };
}

/** start → issuer (signs in as `account`) → the callback URL the issuer sends the browser to. */
async function throughIssuer(
  host: string,
  account: string | null,
  next?: string,
): Promise<{ started: Started; callback: URL }> {
  const started = await start(host, next);
  issuer.nextLogin = account;
  const callback = await visitIssuer(started.location.href, issuer.url);
  expect(callback.origin).toBe(`http://${host}`);
  expect(callback.pathname).toBe(CALLBACK);
  return { started, callback };
}

function callbackRequest(host: string, callback: URL, cookie?: string) {
  const req = app.http(host).get(`${callback.pathname}${callback.search}`);
  return cookie ? req.set('Cookie', cookie) : req;
}

async function seedUser(
  tenant: TenantRef,
  email: string,
  status: 'invited' | 'active' | 'deactivated',
): Promise<string> {
  return app.services.transactions.run(tenant, async (tx) => {
    const row = await tx.db.executeQuery<{ id: string }>(
      CompiledQuery.raw(`insert into users (email, display_name, status) values ($1, 'Seeded', $2) returning id`, [
        email,
        status,
      ]),
    );
    return row.rows[0]!.id;
  });
}

async function count(tenant: TenantRef, sql: string, params: unknown[] = []): Promise<number> {
  return app.services.transactions.run(tenant, async (tx) => {
    const result = await tx.db.executeQuery<{ n: string }>(CompiledQuery.raw(sql, params));
    return Number(result.rows[0]!.n);
  });
}

function expectRefusal(
  res: { status: number; headers: Record<string, unknown>; body: Record<string, unknown> },
  status: number,
  code: string,
  reason?: string,
): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body.code).toBe(code);
  if (reason) expect(res.body.reason).toBe(reason);
  expect(clearsState(res), `state cookie cleared: ${JSON.stringify(setCookies(res))}`).toBe(true);
  expect(cookieNamed(res, 'app_session')).toBeUndefined();
}

describe('GET /api/v1/auth/oidc/start', () => {
  it('sets the app_oidc state cookie and redirects to the issuer with an S256 PKCE challenge', async () => {
    const { location, setCookie } = await start('acme.localhost');
    expect(location.origin).toBe(issuer.url);
    expect(location.pathname).toBe('/auth');
    const params = location.searchParams;
    expect(params.get('response_type')).toBe('code');
    expect(params.get('client_id')).toBe(CLIENT_ID);
    expect(params.get('redirect_uri')).toBe(`http://acme.localhost${CALLBACK}`);
    expect(params.get('scope')).toBe('openid email');
    expect(params.get('code_challenge_method')).toBe('S256');
    expect(params.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(params.get('state')).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(params.get('nonce')).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    // Local public host: no Secure flag and no __Host- prefix, like the session cookie.
    expect(setCookie).toMatch(/^app_oidc=v1\.[A-Za-z0-9_-]+;/);
    expect(setCookie).toMatch(/; HttpOnly/);
    expect(setCookie).toMatch(/; SameSite=Lax/);
    expect(setCookie).toMatch(/; Path=\//);
    expect(setCookie).toMatch(/; Max-Age=600/);
    expect(setCookie).not.toMatch(/Secure/);
    // Sealed: neither the state, the nonce nor the verifier can be read from the cookie.
    const sealed = Buffer.from(setCookie.split(';')[0]!.slice('app_oidc=v1.'.length), 'base64url').toString('latin1');
    expect(sealed).not.toContain(params.get('state')!);
    expect(sealed).not.toContain(params.get('nonce')!);
  });

  it('gives every start fresh state, nonce and challenge', async () => {
    const a = await start('acme.localhost');
    const b = await start('acme.localhost');
    for (const name of ['state', 'nonce', 'code_challenge']) {
      expect(a.location.searchParams.get(name)).not.toBe(b.location.searchParams.get(name));
    }
  });
});

describe('GET /api/v1/auth/oidc/callback', () => {
  it('opens a session for the active user at the verified address and lands on /admin', async () => {
    // The browser already carries a session: like login, single sign-on replaces it.
    const user = await signInAs(app, acme, ['widget:read'], { email: 'alice@acme.test' });
    // The issuer's spelling differs in case: addresses compare case-insensitively.
    issuer.accounts.set('alice', { email: 'Alice@ACME.test', email_verified: true });
    const { started, callback } = await throughIssuer('acme.localhost', 'alice');

    const res = await callbackRequest('acme.localhost', callback, `${started.stateCookie}; ${user.cookie}`);
    expect(res.status, JSON.stringify(res.body)).toBe(302);
    expect(res.headers.location).toBe('/admin');
    expect(clearsState(res)).toBe(true);
    // The issuer offers client_secret_basic, so the client authenticates with a Basic header.
    expect(issuer.tokenRequests).toEqual(['basic']);
    const session = cookieNamed(res, 'app_session');
    expect(session).toMatch(/^app_session=[A-Za-z0-9_-]{43};/);
    expect(session).toMatch(/; HttpOnly/);
    expect(session).toMatch(/; SameSite=Lax/);
    expect(session).not.toMatch(/Secure/);

    // The cookie is a working session of this tenant, for this user.
    const catalog = await app.http('acme.localhost').get('/api/v1/admin/resources').set('Cookie', cookiePair(session!));
    expect(catalog.status).toBe(200);
    expect(catalog.body.resources.map((r: { key: string }) => r.key)).toContain('testkit.widget');
    const me = await app.http('acme.localhost').get('/api/v1/auth/me').set('Cookie', cookiePair(session!));
    expect(me.status).toBe(200);
    expect(JSON.stringify(me.body)).toContain(user.userId);
    // A fresh id: the session the browser carried before is gone.
    expect(await count(acme, 'select count(*) as n from sessions where user_id = $1', [user.userId])).toBe(1);
    expect(cookiePair(session!)).not.toBe(user.cookie);
    expect((await app.http('acme.localhost').get('/api/v1/auth/me').set('Cookie', user.cookie)).status).toBe(401);
    // ...and of no other tenant.
    const elsewhere = await app
      .http('globex.localhost')
      .get('/api/v1/admin/resources')
      .set('Cookie', cookiePair(session!));
    expect(elsewhere.status).toBe(401);

    const events = await app.services.db.pool.query<{
      payload: Record<string, unknown>;
      actor_id: string | null;
      tenant_id: string;
    }>(`select payload, actor_id, tenant_id from outbox where name = 'auth.logged_in'`);
    expect(events.rows).toEqual([
      { payload: { method: 'oidc', userId: user.userId }, actor_id: user.userId, tenant_id: acme.id },
    ]);
  });

  it('lands on a safe local next path, and on /admin when next is not local', async () => {
    await signInAs(app, acme, [], { email: 'nina@acme.test' });
    issuer.accounts.set('nina', { email: 'nina@acme.test', email_verified: true });
    for (const [next, landing] of [
      ['/admin/testkit/widget?page=2', '/admin/testkit/widget?page=2'],
      ['//evil.test/admin', '/admin'],
      ['/\\evil.test', '/admin'],
      ['https://evil.test/', '/admin'],
    ] as const) {
      const { started, callback } = await throughIssuer('acme.localhost', 'nina', next);
      const res = await callbackRequest('acme.localhost', callback, started.stateCookie);
      expect(res.status, `${next}: ${JSON.stringify(res.body)}`).toBe(302);
      expect(res.headers.location).toBe(landing);
    }
  });

  it('refuses an address the issuer has not verified', async () => {
    await signInAs(app, acme, [], { email: 'uma@acme.test' });
    issuer.accounts.set('uma', { email: 'uma@acme.test', email_verified: false });
    const { started, callback } = await throughIssuer('acme.localhost', 'uma');
    const res = await callbackRequest('acme.localhost', callback, started.stateCookie);
    expectRefusal(res, 401, 'OIDC_REFUSED', 'email_unverified');

    // A claim that is not a JSON true is no verification either.
    issuer.accounts.set('uma', { email: 'uma@acme.test', email_verified: 'true' });
    const again = await throughIssuer('acme.localhost', 'uma');
    expectRefusal(
      await callbackRequest('acme.localhost', again.callback, again.started.stateCookie),
      401,
      'OIDC_REFUSED',
      'email_unverified',
    );
  });

  it('refuses an address with no account in this tenant and creates nobody', async () => {
    issuer.accounts.set('stranger', { email: 'stranger@nowhere.test', email_verified: true });
    const usersBefore = await count(acme, 'select count(*) as n from users');
    const sessionsBefore = await count(acme, 'select count(*) as n from sessions');
    const { started, callback } = await throughIssuer('acme.localhost', 'stranger');
    const res = await callbackRequest('acme.localhost', callback, started.stateCookie);
    expectRefusal(res, 401, 'OIDC_REFUSED', 'unknown_address');
    expect(await count(acme, 'select count(*) as n from users')).toBe(usersBefore);
    expect(await count(acme, `select count(*) as n from users where lower(email) = 'stranger@nowhere.test'`)).toBe(0);
    expect(await count(acme, 'select count(*) as n from sessions')).toBe(sessionsBefore);
  });

  it('refuses an address holding NUL, which no account can have, as unknown (not a 500)', async () => {
    await signInAs(app, acme, [], { email: 'nora@acme.test' });
    issuer.accounts.set('nul', { email: 'nora@acme.test\u0000', email_verified: true });
    const { started, callback } = await throughIssuer('acme.localhost', 'nul');
    const res = await callbackRequest('acme.localhost', callback, started.stateCookie);
    expectRefusal(res, 401, 'OIDC_REFUSED', 'unknown_address');
  });

  it('refuses a user of another tenant', async () => {
    const bob = await signInAs(app, globex, ['widget:read'], { email: 'bob@globex.test' });
    issuer.accounts.set('bob', { email: 'bob@globex.test', email_verified: true });
    const { started, callback } = await throughIssuer('acme.localhost', 'bob');
    const res = await callbackRequest('acme.localhost', callback, started.stateCookie);
    expectRefusal(res, 401, 'OIDC_REFUSED', 'unknown_address');
    expect(await count(acme, `select count(*) as n from users where email = 'bob@globex.test'`)).toBe(0);
    expect(await count(globex, 'select count(*) as n from sessions where user_id = $1', [bob.userId])).toBe(1);

    // The same person signing in at their own tenant's host is fine.
    const home = await throughIssuer('globex.localhost', 'bob');
    const ok = await callbackRequest('globex.localhost', home.callback, home.started.stateCookie);
    expect(ok.status, JSON.stringify(ok.body)).toBe(302);
    expect(await count(globex, 'select count(*) as n from sessions where user_id = $1', [bob.userId])).toBe(2);
  });

  it('refuses an invited user and a deactivated user', async () => {
    const invited = await seedUser(acme, 'ivy@acme.test', 'invited');
    const deactivated = await seedUser(acme, 'dan@acme.test', 'deactivated');
    issuer.accounts.set('ivy', { email: 'ivy@acme.test', email_verified: true });
    issuer.accounts.set('dan', { email: 'dan@acme.test', email_verified: true });
    for (const [account, userId] of [
      ['ivy', invited],
      ['dan', deactivated],
    ] as const) {
      const { started, callback } = await throughIssuer('acme.localhost', account);
      const res = await callbackRequest('acme.localhost', callback, started.stateCookie);
      expectRefusal(res, 401, 'OIDC_REFUSED', 'user_not_active');
      expect(await count(acme, 'select count(*) as n from sessions where user_id = $1', [userId])).toBe(0);
    }
  });

  it('refuses a tampered state cookie', async () => {
    await signInAs(app, acme, [], { email: 'tess@acme.test' });
    issuer.accounts.set('tess', { email: 'tess@acme.test', email_verified: true });
    const { started, callback } = await throughIssuer('acme.localhost', 'tess');
    const [name, value] = started.stateCookie.split('=') as [string, string];
    // Flip one character of the sealed payload.
    const at = value.length - 10;
    const flipped = `${value.slice(0, at)}${value[at] === 'A' ? 'B' : 'A'}${value.slice(at + 1)}`;
    const res = await callbackRequest('acme.localhost', callback, `${name}=${flipped}`);
    expectRefusal(res, 400, 'OIDC_STATE_INVALID');
    // A cookie forged from scratch fails the same way.
    const forged = Buffer.from(JSON.stringify({ state: callback.searchParams.get('state') })).toString('base64url');
    expectRefusal(
      await callbackRequest('acme.localhost', callback, `app_oidc=v1.${forged}`),
      400,
      'OIDC_STATE_INVALID',
    );
  });

  it('refuses an expired state cookie', async () => {
    await signInAs(app, acme, [], { email: 'eve@acme.test' });
    issuer.accounts.set('eve', { email: 'eve@acme.test', email_verified: true });
    const { started, callback } = await throughIssuer('acme.localhost', 'eve');
    // Genuinely sealed (the key derives from the client secret), but past its ten minutes.
    const key = stateKey(CLIENT_SECRET);
    const saved = openState(key, started.stateCookie.slice('app_oidc='.length), new Date())!;
    expect(saved.state).toBe(callback.searchParams.get('state'));
    const expired = sealState(key, { ...saved, expiresAt: Math.floor(Date.now() / 1000) - 1 });
    expectRefusal(await callbackRequest('acme.localhost', callback, `app_oidc=${expired}`), 400, 'OIDC_STATE_INVALID');
  });

  it('refuses a state parameter that is not the one this browser started with', async () => {
    await signInAs(app, acme, [], { email: 'sam@acme.test' });
    issuer.accounts.set('sam', { email: 'sam@acme.test', email_verified: true });
    const mine = await start('acme.localhost');
    // Someone else's callback (login CSRF): a valid code and state, but not this browser's.
    const theirs = await throughIssuer('acme.localhost', 'sam');
    const res = await callbackRequest('acme.localhost', theirs.callback, mine.stateCookie);
    expectRefusal(res, 400, 'OIDC_STATE_INVALID');
  });

  it('refuses a callback without the state cookie', async () => {
    await signInAs(app, acme, [], { email: 'mo@acme.test' });
    issuer.accounts.set('mo', { email: 'mo@acme.test', email_verified: true });
    const { callback } = await throughIssuer('acme.localhost', 'mo');
    const res = await callbackRequest('acme.localhost', callback);
    expectRefusal(res, 400, 'OIDC_STATE_INVALID');
  });

  it('refuses a state cookie carried to another tenant', async () => {
    await signInAs(app, globex, [], { email: 'gil@globex.test' });
    issuer.accounts.set('gil', { email: 'gil@globex.test', email_verified: true });
    const { started, callback } = await throughIssuer('acme.localhost', 'gil');
    const res = await callbackRequest('globex.localhost', callback, started.stateCookie);
    expectRefusal(res, 400, 'OIDC_STATE_INVALID');
  });

  it('refuses a replayed callback: once with the cleared cookie gone, and at the issuer with the old one', async () => {
    await signInAs(app, acme, [], { email: 'rita@acme.test' });
    issuer.accounts.set('rita', { email: 'rita@acme.test', email_verified: true });
    const { started, callback } = await throughIssuer('acme.localhost', 'rita');
    const first = await callbackRequest('acme.localhost', callback, started.stateCookie);
    expect(first.status).toBe(302);
    expect(clearsState(first)).toBe(true);

    // A browser honouring the cleared cookie replays without it.
    expectRefusal(await callbackRequest('acme.localhost', callback), 400, 'OIDC_STATE_INVALID');
    // A replay that kept the old cookie gets past the state check and is refused by the issuer.
    const replay = await callbackRequest('acme.localhost', callback, started.stateCookie);
    expectRefusal(replay, 401, 'OIDC_REFUSED', 'code_rejected');
    expect(replay.body.error).toBe('invalid_grant');
  });

  it('refuses a callback naming its state or its code twice, and clears the state cookie like every refusal', async () => {
    await signInAs(app, acme, [], { email: 'dee@acme.test' });
    issuer.accounts.set('dee', { email: 'dee@acme.test', email_verified: true });
    const twice = async (name: 'state' | 'code') => {
      const { started, callback } = await throughIssuer('acme.localhost', 'dee');
      const value = callback.searchParams.get(name)!;
      const res = await app
        .http('acme.localhost')
        .get(`${callback.pathname}${callback.search}&${name}=${encodeURIComponent(value)}`)
        .set('Cookie', started.stateCookie);
      return res;
    };
    // Two states are not the one this browser started with.
    expectRefusal(await twice('state'), 400, 'OIDC_STATE_INVALID');
    // An authorization response naming a parameter twice is not a valid one (RFC 6749, section 3.1).
    expectRefusal(await twice('code'), 401, 'OIDC_REFUSED', 'response_invalid');
    expect(
      await count(
        acme,
        `select count(*) as n from sessions s join users u on u.id = s.user_id where u.email = 'dee@acme.test'`,
      ),
    ).toBe(1);
  });

  it('reports a sign-in the person declined at the issuer', async () => {
    const { started, callback } = await throughIssuer('acme.localhost', null);
    expect(callback.searchParams.get('error')).toBe('access_denied');
    const res = await callbackRequest('acme.localhost', callback, started.stateCookie);
    expectRefusal(res, 401, 'OIDC_REFUSED', 'issuer_error');
    expect(res.body.error).toBe('access_denied');
  });
});

describe('OpenAPI with an issuer configured', () => {
  it('lists the start route and the callback at the redirect path', async () => {
    const res = await app.http('acme.localhost').get('/api/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.paths['/api/v1/auth/oidc/start'].get.operationId).toBe('auth-oidc-start');
    expect(res.body.paths[CALLBACK].get.operationId).toBe('auth-oidc-callback');
  });

  it('declares every refusal of the two routes as application/problem+json, as they answer it', async () => {
    const res = await app.http('acme.localhost').get('/api/v1/openapi.json');
    type Responses = Record<string, { description: string; content?: Record<string, unknown> }>;
    const start: Responses = res.body.paths['/api/v1/auth/oidc/start'].get.responses;
    const callback: Responses = res.body.paths[CALLBACK].get.responses;
    for (const [operation, responses] of [
      ['start', start],
      ['callback', callback],
    ] as const) {
      for (const [status, response] of Object.entries(responses).filter(([status]) => Number(status) >= 400))
        expect(Object.keys(response.content ?? {}), `${operation} ${status}`).toEqual(['application/problem+json']);
    }
    expect(start['502']!.description).toMatch(/OIDC_ISSUER_UNAVAILABLE/);
    expect(callback['400']!.description).toMatch(/OIDC_STATE_INVALID/);
    expect(callback['401']!.description).toMatch(/OIDC_REFUSED/);
    expect(callback['502']!.description).toMatch(/OIDC_ISSUER_UNAVAILABLE/);
  });
});
