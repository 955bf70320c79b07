import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, startTestApp, type TestApp } from '../../helpers/app.ts';
import { testConfig } from '../../helpers/config.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { CompiledQuery } from 'kysely';
import { hashSecret } from '../../../framework/access/session-cookie.ts';
import { addUser, sessionCookieOf } from './fixtures.ts';

let app: TestApp;
let acme: TenantRef;
let globex: TenantRef;
beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'acme');
  globex = await createCustomer(app, 'globex');
});
afterAll(async () => {
  await app?.close();
});

const acmeHttp = () => app.http('acme.localhost');

async function login(user: { email: string; password: string }, headers: Record<string, string> = {}) {
  let req = acmeHttp().post('/api/v1/auth/login');
  for (const [k, v] of Object.entries(headers)) req = req.set(k, v);
  const res = await req.send({ email: user.email, password: user.password });
  expect(res.status).toBe(200);
  return res;
}

interface SessionRow {
  id: string;
  id_hash: Buffer;
  created_at: Date;
  last_seen_at: Date;
  expires_at: Date;
  user_agent: string;
  ip: string;
}

async function sessionsOf(tenant: TenantRef, userId: string): Promise<SessionRow[]> {
  return app.services.transactions.run(
    tenant,
    async (ctx) =>
      (await ctx.db.executeQuery<SessionRow>(CompiledQuery.raw('select * from sessions where user_id = $1', [userId])))
        .rows,
  );
}

async function setSession(tenant: TenantRef, id: string, assignments: string): Promise<void> {
  await app.services.transactions.run(tenant, (ctx) =>
    ctx.db.executeQuery(CompiledQuery.raw(`update sessions set ${assignments} where id = $1`, [id])),
  );
}

const DAY = 24 * 3600_000;

describe('session cookie', () => {
  it('is app_session, HttpOnly, SameSite=Lax, Path=/, without Secure or prefix on a local public host', async () => {
    const user = await addUser(app, acme);
    const res = await login(user);
    const line = (res.headers['set-cookie'] as unknown as string[]).find((c) => c.startsWith('app_session='))!;
    const attributes = line.split(';').map((a) => a.trim().toLowerCase());
    expect(attributes).toContain('httponly');
    expect(attributes).toContain('samesite=lax');
    expect(attributes).toContain('path=/');
    expect(attributes).not.toContain('secure');
  });

  it('carries 256 random bits of which only the SHA-256 is stored', async () => {
    const user = await addUser(app, acme);
    const raw = sessionCookieOf(await login(user))!.split('=')[1]!;
    expect(Buffer.from(raw, 'base64url')).toHaveLength(32);
    const [row] = await sessionsOf(acme, user.id);
    expect(Buffer.compare(row!.id_hash, hashSecret(raw))).toBe(0);
    // The raw id is in no column of any session row.
    const dump = await app.services.transactions.run(acme, async (ctx) =>
      JSON.stringify((await ctx.db.executeQuery(CompiledQuery.raw('select s::text as t from sessions s'))).rows),
    );
    expect(dump).not.toContain(raw);
    expect(dump).not.toContain(Buffer.from(raw, 'base64url').toString('hex'));
  });

  it('is replayed by a non-browser client as a Cookie header', async () => {
    const user = await addUser(app, acme);
    const res = await login(user);
    const cookie = sessionCookieOf(res)!;
    const me = await acmeHttp().get('/api/v1/auth/me').set('Cookie', cookie);
    expect(me.status).toBe(200);
    expect(me.body.userId).toBe(user.id);
  });

  it("is no session on another tenant's host", async () => {
    const user = await addUser(app, acme, { email: 'shared@example.test' });
    await addUser(app, globex, { email: 'shared@example.test' });
    const cookie = sessionCookieOf(await login(user))!;
    const elsewhere = await app.http('globex.localhost').get('/api/v1/auth/me').set('Cookie', cookie);
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.body.code).toBe('AUTH_REQUIRED');
    expect((await acmeHttp().get('/api/v1/auth/me').set('Cookie', cookie)).status).toBe(200);
  });
});

describe('session lifetime', () => {
  it('slides 30 days from last use, moving at most once every 5 minutes', async () => {
    const user = await addUser(app, acme);
    const cookie = sessionCookieOf(await login(user))!;
    const [opened] = await sessionsOf(acme, user.id);
    expect(Math.abs(opened!.expires_at.getTime() - opened!.created_at.getTime() - 30 * DAY)).toBeLessThan(5_000);

    // Used 4 minutes ago: the expiry does not move.
    await setSession(
      acme,
      opened!.id,
      `last_seen_at = now() - interval '4 minutes', expires_at = now() + interval '1 day'`,
    );
    await acmeHttp().get('/api/v1/auth/me').set('Cookie', cookie).expect(200);
    const [untouched] = await sessionsOf(acme, user.id);
    expect(Math.abs(untouched!.expires_at.getTime() - Date.now() - DAY)).toBeLessThan(60_000);

    // Used 6 minutes ago: the expiry slides to 30 days from now.
    await setSession(
      acme,
      opened!.id,
      `last_seen_at = now() - interval '6 minutes', expires_at = now() + interval '1 day'`,
    );
    await acmeHttp().get('/api/v1/auth/me').set('Cookie', cookie).expect(200);
    const [touched] = await sessionsOf(acme, user.id);
    expect(Math.abs(touched!.expires_at.getTime() - Date.now() - 30 * DAY)).toBeLessThan(60_000);
    expect(Date.now() - touched!.last_seen_at.getTime()).toBeLessThan(60_000);
  });

  it('never slides past 90 days from creation', async () => {
    const user = await addUser(app, acme);
    const cookie = sessionCookieOf(await login(user))!;
    const [row] = await sessionsOf(acme, user.id);
    await setSession(
      acme,
      row!.id,
      `created_at = now() - interval '89 days', last_seen_at = now() - interval '1 hour', expires_at = now() + interval '1 hour'`,
    );
    await acmeHttp().get('/api/v1/auth/me').set('Cookie', cookie).expect(200);
    const [capped] = await sessionsOf(acme, user.id);
    expect(capped!.expires_at.getTime()).toBe(capped!.created_at.getTime() + 90 * DAY);
  });

  it('is no session once expired', async () => {
    const user = await addUser(app, acme);
    const cookie = sessionCookieOf(await login(user))!;
    const [row] = await sessionsOf(acme, user.id);
    await setSession(acme, row!.id, `expires_at = now() - interval '1 second'`);
    expect((await acmeHttp().get('/api/v1/auth/me').set('Cookie', cookie)).status).toBe(401);
  });

  it('records the user agent and the client address once, when the session opens', async () => {
    const user = await addUser(app, acme);
    const cookie = sessionCookieOf(
      await login(user, { 'User-Agent': 'first-agent/1.0', 'X-Forwarded-For': '203.0.113.7' }),
    )!;
    const [row] = await sessionsOf(acme, user.id);
    expect(row).toMatchObject({ user_agent: 'first-agent/1.0', ip: '203.0.113.7' });
    await setSession(acme, row!.id, `last_seen_at = now() - interval '10 minutes'`);
    await acmeHttp()
      .get('/api/v1/auth/me')
      .set('Cookie', cookie)
      .set('User-Agent', 'other-agent/2.0')
      .set('X-Forwarded-For', '198.51.100.9')
      .expect(200);
    const [later] = await sessionsOf(acme, user.id);
    expect(later).toMatchObject({ user_agent: 'first-agent/1.0', ip: '203.0.113.7' });
    expect(later!.last_seen_at.getTime()).toBeGreaterThan(row!.last_seen_at.getTime());
  });
});

describe('session cookie on a public host', () => {
  it('is __Host-app_session and Secure, and is read back under that name', async () => {
    const publicApp = await startTestApp({ config: testConfig({ server: { public_host: 'tenantry.example.com' } }) });
    try {
      const shop = await createCustomer(publicApp, 'shop', 'shop.example.com');
      const user = await addUser(publicApp, shop);
      const res = await publicApp
        .http('shop.example.com')
        .post('/api/v1/auth/login')
        .send({ email: user.email, password: user.password });
      expect(res.status).toBe(200);
      const line = (res.headers['set-cookie'] as unknown as string[]).find((c) => c.includes('app_session='))!;
      expect(line.startsWith('__Host-app_session=')).toBe(true);
      const attributes = line.split(';').map((a) => a.trim().toLowerCase());
      expect(attributes).toEqual(expect.arrayContaining(['secure', 'httponly', 'samesite=lax', 'path=/']));
      expect(attributes.some((a) => a.startsWith('domain='))).toBe(false);
      const cookie = sessionCookieOf(res)!;
      expect((await publicApp.http('shop.example.com').get('/api/v1/auth/me').set('Cookie', cookie)).status).toBe(200);
      // The unprefixed name is not read on a public host.
      const plain = cookie.replace('__Host-', '');
      expect((await publicApp.http('shop.example.com').get('/api/v1/auth/me').set('Cookie', plain)).status).toBe(401);
    } finally {
      await publicApp.close();
    }
  });
});

describe('session cookie Max-Age follows the server-side expiry', () => {
  const maxAgeOf = (res: { headers: Record<string, unknown> }): number | undefined => {
    const line = ((res.headers['set-cookie'] as unknown as string[] | undefined) ?? []).find((c) =>
      c.startsWith('app_session='),
    );
    const match = line?.match(/;\s*Max-Age=(\d+)/i);
    return match ? Number(match[1]) : undefined;
  };
  const SECONDS_PER_DAY = 24 * 3600;

  it('at sign-in is the new session’s 30 days, not 90', async () => {
    const user = await addUser(app, acme);
    const res = await login(user);
    expect(maxAgeOf(res)).toBe(30 * SECONDS_PER_DAY);
    const [row] = await sessionsOf(acme, user.id);
    expect(Math.abs(row!.expires_at.getTime() - Date.now() - maxAgeOf(res)! * 1000)).toBeLessThan(60_000);
  });

  it('is re-issued when a request slides the expiry, to what the session has left', async () => {
    const user = await addUser(app, acme);
    const cookie = sessionCookieOf(await login(user))!;
    const [row] = await sessionsOf(acme, user.id);
    await setSession(
      acme,
      row!.id,
      `last_seen_at = now() - interval '6 minutes', expires_at = now() + interval '1 day'`,
    );
    const res = await acmeHttp().get('/api/v1/auth/me').set('Cookie', cookie).expect(200);
    expect(sessionCookieOf(res)).toBe(cookie);
    expect(Math.abs(maxAgeOf(res)! - 30 * SECONDS_PER_DAY)).toBeLessThan(60);
  });

  it('never reaches past 90 days from the session’s creation', async () => {
    const user = await addUser(app, acme);
    const cookie = sessionCookieOf(await login(user))!;
    const [row] = await sessionsOf(acme, user.id);
    await setSession(
      acme,
      row!.id,
      `created_at = now() - interval '85 days', last_seen_at = now() - interval '1 hour', expires_at = now() + interval '1 hour'`,
    );
    const res = await acmeHttp().get('/api/v1/auth/me').set('Cookie', cookie).expect(200);
    expect(Math.abs(maxAgeOf(res)! - 5 * SECONDS_PER_DAY)).toBeLessThan(60);
    const [capped] = await sessionsOf(acme, user.id);
    expect(Math.abs(capped!.expires_at.getTime() - Date.now() - maxAgeOf(res)! * 1000)).toBeLessThan(60_000);
  });

  it('is not re-sent while the expiry does not move', async () => {
    const user = await addUser(app, acme);
    const cookie = sessionCookieOf(await login(user))!;
    const res = await acmeHttp().get('/api/v1/auth/me').set('Cookie', cookie).expect(200);
    expect(res.headers['set-cookie']).toBeUndefined();
  });

  it('a sign-out that slides the expiry still clears the cookie', async () => {
    const user = await addUser(app, acme);
    const cookie = sessionCookieOf(await login(user))!;
    const [row] = await sessionsOf(acme, user.id);
    await setSession(acme, row!.id, `last_seen_at = now() - interval '6 minutes'`);
    const res = await acmeHttp().post('/api/v1/auth/logout').set('Cookie', cookie).expect(204);
    const lines = (res.headers['set-cookie'] as unknown as string[]).filter((c) => c.startsWith('app_session='));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^app_session=;/);
  });
});
