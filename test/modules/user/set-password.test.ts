import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import argon2 from 'argon2';
import { sql } from 'kysely';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { outboxEvents, storedUser } from './support.ts';

let app: TestApp;
let acme: TenantRef;
let manager: string;
beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'acme');
  manager = (await signInAs(app, acme, ['user:manage'])).cookie;
});
afterAll(async () => {
  await app?.close();
});

const http = () => app.http('acme.localhost');
const invite = async (email: string) =>
  (await http().post('/api/v1/user/invitations').set('Cookie', manager).send({ email })).body.id as string;
const setPassword = (id: string, password: string) =>
  http().post(`/api/v1/user/users/${id}/set-password`).set('Cookie', manager).send({ password });
const passwordEvents = async (id: string) =>
  (await outboxEvents(app, 'user.password_set')).filter((e) => e.payload.id === id);
const login = (email: string, password: string) => http().post('/api/v1/auth/login').send({ email, password });

describe('set-password', () => {
  it('moves invited to active, stores an argon2id hash and publishes user.password_set', async () => {
    const id = await invite('ann@acme.test');
    expect((await login('ann@acme.test', 'first password')).status).toBe(401);
    const res = await setPassword(id, 'first password');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('active');
    expect(JSON.stringify(res.body)).not.toMatch(/argon2|first password/);
    const stored = (await storedUser(app, acme, id))!;
    expect(stored.status).toBe('active');
    expect(stored.password_hash).toMatch(/^\$argon2id\$/);
    expect(await argon2.verify(stored.password_hash!, 'first password')).toBe(true);
    expect(await passwordEvents(id)).toEqual([expect.objectContaining({ tenantId: acme.id, payload: { id } })]);
    expect((await login('ann@acme.test', 'first password')).status).toBe(200);
  });

  it('active → active with the same password still changes the hash and still publishes', async () => {
    const id = await invite('bob@acme.test');
    await setPassword(id, 'same password');
    const before = (await storedUser(app, acme, id))!.password_hash;
    const res = await setPassword(id, 'same password');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('active');
    const after = (await storedUser(app, acme, id))!.password_hash;
    expect(after).not.toBe(before);
    expect(await argon2.verify(after!, 'same password')).toBe(true);
    expect(await passwordEvents(id)).toHaveLength(2);
  });

  it('refuses a deactivated user with 409 and changes nothing', async () => {
    const id = await invite('carl@acme.test');
    await setPassword(id, 'carl password');
    await http().post(`/api/v1/user/users/${id}/deactivate`).set('Cookie', manager);
    const hash = (await storedUser(app, acme, id))!.password_hash;
    const res = await setPassword(id, 'another password');
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('INVALID_STATE');
    expect(await storedUser(app, acme, id)).toMatchObject({ status: 'deactivated', password_hash: hash });
    expect(await passwordEvents(id)).toHaveLength(1);
  });

  it('applies the password policy and needs user:manage', async () => {
    const id = await invite('dan@acme.test');
    const short = await setPassword(id, 'short');
    expect(short.status).toBe(422);
    const reader = (await signInAs(app, acme, ['user:read'])).cookie;
    expect(
      (
        await http()
          .post(`/api/v1/user/users/${id}/set-password`)
          .set('Cookie', reader)
          .send({ password: 'long enough' })
      ).status,
    ).toBe(403);
    expect(await storedUser(app, acme, id)).toMatchObject({ status: 'invited', password_hash: null });
    expect(await passwordEvents(id)).toHaveLength(0);
  });
});

describe('set-password ends the person’s sessions', () => {
  const sessionCookie = (res: { headers: Record<string, unknown> }) =>
    ((res.headers['set-cookie'] as unknown as string[]) ?? [])
      .find((c) => c.startsWith('app_session='))!
      .split(';', 1)[0]!;
  const sessionCount = async (userId: string) =>
    app.services.transactions.run(
      acme,
      async (ctx) =>
        (await sql<{ n: number }>`select count(*)::int as n from sessions where user_id = ${userId}`.execute(ctx.db))
          .rows[0]!.n,
    );

  it('a stolen session no longer works once an administrator sets a new password', async () => {
    const id = await invite('eve@acme.test');
    await setPassword(id, 'original password');
    const own = sessionCookie(await login('eve@acme.test', 'original password'));
    const stolen = sessionCookie(await login('eve@acme.test', 'original password'));
    expect((await http().get('/api/v1/auth/me').set('Cookie', stolen)).status).toBe(200);
    expect(await sessionCount(id)).toBe(2);

    expect((await setPassword(id, 'password after theft')).status).toBe(200);

    for (const cookie of [stolen, own]) {
      const me = await http().get('/api/v1/auth/me').set('Cookie', cookie);
      expect(me.status).toBe(401);
      expect(me.body.code).toBe('AUTH_REQUIRED');
    }
    expect(await sessionCount(id)).toBe(0);
    // The administrator's own session is untouched, and the person signs in with the new password.
    expect((await http().get('/api/v1/auth/me').set('Cookie', manager)).status).toBe(200);
    expect((await login('eve@acme.test', 'password after theft')).status).toBe(200);
  });

  it('a refused set-password ends nothing (same transaction)', async () => {
    const id = await invite('fay@acme.test');
    await setPassword(id, 'fay password');
    const cookie = sessionCookie(await login('fay@acme.test', 'fay password'));
    expect((await setPassword(id, 'short')).status).toBe(422);
    expect((await http().get('/api/v1/auth/me').set('Cookie', cookie)).status).toBe(200);
  });
});
