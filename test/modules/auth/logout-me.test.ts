import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { addUser, outbox, sessionCookieOf } from './fixtures.ts';

let app: TestApp;
let acme: TenantRef;
beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'acme');
});
afterAll(async () => {
  await app?.close();
});

const http = () => app.http('acme.localhost');
async function signIn(user: { email: string; password: string }): Promise<string> {
  const res = await http().post('/api/v1/auth/login').send({ email: user.email, password: user.password });
  expect(res.status).toBe(200);
  return sessionCookieOf(res)!;
}

describe('POST /api/v1/auth/logout', () => {
  it('deletes the session, clears the cookie and publishes auth.logged_out', async () => {
    const user = await addUser(app, acme);
    const cookie = await signIn(user);
    const other = await signIn(user);
    const res = await http().post('/api/v1/auth/logout').set('Cookie', cookie);
    expect(res.status).toBe(204);
    expect(
      (res.headers['set-cookie'] as unknown as string[]).some((c) =>
        /^app_session=;.*Expires=Thu, 01 Jan 1970/.test(c),
      ),
    ).toBe(true);
    expect((await http().get('/api/v1/auth/me').set('Cookie', cookie)).status).toBe(401);
    // Only this session ends.
    expect((await http().get('/api/v1/auth/me').set('Cookie', other)).status).toBe(200);
    const events = (await outbox(app, 'auth.logged_out')).filter((e) => e.payload.userId === user.id);
    expect(events.map((e) => [e.payload, e.actor_id])).toEqual([[{ userId: user.id }, user.id]]);
  });

  it('is no error when signed out: 204, cookie cleared, nothing published', async () => {
    const before = (await outbox(app, 'auth.logged_out')).length;
    const bare = await http().post('/api/v1/auth/logout');
    expect(bare.status).toBe(204);
    expect(bare.headers['set-cookie']).toBeDefined();
    const stale = await http().post('/api/v1/auth/logout').set('Cookie', 'app_session=not-a-session');
    expect(stale.status).toBe(204);
    expect((await outbox(app, 'auth.logged_out')).length).toBe(before);
  });
});

describe('GET /api/v1/auth/me', () => {
  it('answers the Identity of the session', async () => {
    const user = await addUser(app, acme, { roles: ['admin'], displayName: 'Grace' });
    const res = await http()
      .get('/api/v1/auth/me')
      .set('Cookie', await signIn(user));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      userId: user.id,
      email: user.email,
      displayName: 'Grace',
      roles: ['admin'],
      permissions: ['*'],
    });
  });

  it('is 401 AUTH_REQUIRED without a session, and for a user deactivated since signing in', async () => {
    const bare = await http().get('/api/v1/auth/me');
    expect(bare.status).toBe(401);
    expect(bare.body.code).toBe('AUTH_REQUIRED');
    const user = await addUser(app, acme);
    const cookie = await signIn(user);
    await app.services.db.pool.query(`update users set status = 'deactivated' where id = $1`, [user.id]);
    expect((await http().get('/api/v1/auth/me').set('Cookie', cookie)).status).toBe(401);
  });
});
