import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { createCustomer, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import type { MemoryMailbox } from '../../../framework/mail/mailer.ts';
import { mintSetPasswordToken } from '../../../modules/auth/set-password-tokens.ts';
import { addUser, clearAttempts, deliverOutbox, outbox, sessionCookieOf } from './fixtures.ts';
import { withoutRequestId } from '../../helpers/problems.ts';

let app: TestApp;
let acme: TenantRef;
let mailbox: MemoryMailbox;
beforeAll(async () => {
  // Role all: the worker's delivery code runs the reset-link subscription (driven by deliverOutbox).
  app = await startTestApp({ role: 'all' });
  acme = await createCustomer(app, 'acme');
  mailbox = app.services.mailer as MemoryMailbox;
});
afterAll(async () => {
  await app?.close();
});
beforeEach(async () => {
  await clearAttempts(app);
  await deliverOutbox(app);
});

const http = () => app.http('acme.localhost');

async function login(user: { email: string; password: string }, source = '127.0.0.1') {
  return http()
    .post('/api/v1/auth/login')
    .set('X-Forwarded-For', source)
    .send({ email: user.email, password: user.password });
}

async function signedIn(user: { email: string; password: string }): Promise<string> {
  const res = await login(user);
  expect(res.status).toBe(200);
  return sessionCookieOf(res)!;
}

const outboxSince = async (mark: number) => (await outbox(app)).slice(mark);

async function tokenFor(userId: string, purpose: 'reset' | 'invitation' = 'reset'): Promise<string> {
  return app.services.transactions.run(acme, (ctx) => mintSetPasswordToken(ctx, userId, purpose));
}

describe('POST /api/v1/auth/password (change)', () => {
  it('needs a session', async () => {
    const res = await http().post('/api/v1/auth/password').send({ currentPassword: 'a', newPassword: 'b' });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('AUTH_REQUIRED');
  });

  it('needs the password in force, refusing a wrong one with 422 at /body/currentPassword', async () => {
    const user = await addUser(app, acme);
    const cookie = await signedIn(user);
    const mark = (await outbox(app)).length;
    const res = await http()
      .post('/api/v1/auth/password')
      .set('Cookie', cookie)
      .send({ currentPassword: 'not it at all', newPassword: 'a brand new secret' });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(res.body.errors).toEqual([
      { pointer: '/body/currentPassword', message: 'does not match the password in force' },
    ]);
    expect(await outboxSince(mark)).toEqual([]);
    expect((await login(user)).status).toBe(200);
  });

  it('applies the password policy to the new password', async () => {
    const user = await addUser(app, acme);
    const cookie = await signedIn(user);
    const res = await http()
      .post('/api/v1/auth/password')
      .set('Cookie', cookie)
      .send({ currentPassword: user.password, newPassword: 'short' });
    expect(res.status).toBe(422);
    expect(res.body.errors[0].pointer).toBe('/body/newPassword');
  });

  it("stores the new password, ends every other session, keeps the caller's and publishes user.password_set", async () => {
    const user = await addUser(app, acme);
    const caller = await signedIn(user);
    const other = await signedIn(user);
    const mark = (await outbox(app)).length;
    const res = await http()
      .post('/api/v1/auth/password')
      .set('Cookie', caller)
      .send({ currentPassword: user.password, newPassword: 'a brand new secret' });
    expect(res.status).toBe(204);
    expect((await http().get('/api/v1/auth/me').set('Cookie', caller)).status).toBe(200);
    expect((await http().get('/api/v1/auth/me').set('Cookie', other)).status).toBe(401);
    expect((await login(user)).status).toBe(401);
    expect((await login({ email: user.email, password: 'a brand new secret' })).status).toBe(200);
    const events = (await outboxSince(mark)).filter(
      (e) => e.name !== 'auth.login_failed' && e.name !== 'auth.logged_in',
    );
    expect(events.map((e) => [e.name, e.payload])).toEqual([['user.password_set', { id: user.id }]]);
  });

  it('takes exactly { currentPassword, newPassword }', async () => {
    const user = await addUser(app, acme);
    const cookie = await signedIn(user);
    const res = await http()
      .post('/api/v1/auth/password')
      .set('Cookie', cookie)
      .send({ password: user.password, newPassword: 'a brand new secret' });
    expect(res.status).toBe(422);
  });

  it('counts wrong current passwords toward the failed sign-in limit of the client address', async () => {
    const user = await addUser(app, acme);
    const cookie = await signedIn(user);
    for (let i = 0; i < 10; i++) {
      const res = await http()
        .post('/api/v1/auth/password')
        .set('Cookie', cookie)
        .send({ currentPassword: `guess ${i} wrong`, newPassword: 'a brand new secret' });
      expect(res.status).toBe(422);
    }
    const res = await http()
      .post('/api/v1/auth/password')
      .set('Cookie', cookie)
      .send({ currentPassword: user.password, newPassword: 'a brand new secret' });
    expect(res.status).toBe(429);
    expect(res.body.code).toBe('ErrTooManyAttempts');
  });
});

describe('POST /api/v1/auth/password/forgot', () => {
  async function countRows(table: string): Promise<number> {
    const { rows } = await app.services.db.pool.query<{ n: number }>(`select count(*)::int as n from ${table}`);
    return rows[0]!.n;
  }

  it('answers the same and does the same work whether or not the address exists: one auth.reset_requested, nothing else', async () => {
    const active = await addUser(app, acme);
    const invited = await addUser(app, acme, { status: 'invited', password: null });
    const deactivated = await addUser(app, acme, { status: 'deactivated' });
    const answers = [];
    for (const email of [active.email, 'nobody@example.test', invited.email, deactivated.email]) {
      const mark = (await outbox(app)).length;
      const tokens = await countRows('set_password_tokens');
      const mails = mailbox.messages.length;
      const res = await http().post('/api/v1/auth/password/forgot').send({ email });
      answers.push({ status: res.status, body: res.body, cookie: res.headers['set-cookie'] });
      const events = await outboxSince(mark);
      expect(events.map((e) => e.name)).toEqual(['auth.reset_requested']);
      expect(JSON.stringify(events[0]!.payload)).not.toContain('@');
      expect(await countRows('set_password_tokens')).toBe(tokens);
      expect(mailbox.messages.length).toBe(mails);
    }
    for (const answer of answers) expect(answer).toEqual(answers[0]);
    expect(answers[0]!.status).toBe(202);
  });

  it('limits 10 requests per asking client address, never counting the address asked about', async () => {
    const user = await addUser(app, acme);
    for (let i = 0; i < 10; i++) {
      const res = await http()
        .post('/api/v1/auth/password/forgot')
        .set('X-Forwarded-For', '192.0.2.60')
        .send({ email: `someone${i}@example.test` });
      expect(res.status).toBe(202);
    }
    const refused = await http()
      .post('/api/v1/auth/password/forgot')
      .set('X-Forwarded-For', '192.0.2.60')
      .send({ email: user.email });
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('RATE_LIMITED');
    // The same address asked about from elsewhere is still answered, however often it was asked about.
    for (let i = 0; i < 11; i++) {
      expect(
        (
          await http()
            .post('/api/v1/auth/password/forgot')
            .set('X-Forwarded-For', `192.0.2.${100 + i}`)
            .send({ email: user.email })
        ).status,
      ).toBe(202);
    }
  });

  it('takes exactly { email }', async () => {
    expect((await http().post('/api/v1/auth/password/forgot').send({ address: 'a@example.test' })).status).toBe(422);
  });
});

describe('POST /api/v1/auth/password/reset', () => {
  it("sets the password, ends every session including the caller's, clears the cookie and publishes auth.password_reset and user.password_set", async () => {
    const user = await addUser(app, acme);
    const caller = await signedIn(user);
    const other = await signedIn(user);
    const token = await tokenFor(user.id);
    const mark = (await outbox(app)).length;
    const res = await http()
      .post('/api/v1/auth/password/reset')
      .set('Cookie', caller)
      .send({ token, password: 'the new password' });
    expect(res.status).toBe(204);
    const cleared = (res.headers['set-cookie'] as unknown as string[]).find((c) => c.startsWith('app_session='))!;
    expect(cleared).toMatch(/^app_session=;/);
    expect(cleared).toMatch(/Expires=Thu, 01 Jan 1970/);
    expect((await http().get('/api/v1/auth/me').set('Cookie', caller)).status).toBe(401);
    expect((await http().get('/api/v1/auth/me').set('Cookie', other)).status).toBe(401);
    expect((await login({ email: user.email, password: 'the new password' })).status).toBe(200);
    const events = (await outboxSince(mark)).filter((e) => e.name !== 'auth.logged_in');
    expect(events.map((e) => [e.name, e.payload, e.actor_id])).toEqual([
      ['auth.password_reset', { userId: user.id }, user.id],
      ['user.password_set', { id: user.id }, user.id],
    ]);
  });

  it('answers one 401 TOKEN_INVALID for an unknown, a spent and an expired token', async () => {
    const user = await addUser(app, acme);
    const spent = await tokenFor(user.id);
    await http().post('/api/v1/auth/password/reset').send({ token: spent, password: 'the new password' }).expect(204);
    const other = await addUser(app, acme);
    const expired = await tokenFor(other.id);
    await app.services.transactions.run(acme, (ctx) =>
      ctx.db.executeQuery(
        CompiledQuery.raw(
          `update set_password_tokens set expires_at = now() - interval '1 second' where user_id = $1`,
          [other.id],
        ),
      ),
    );
    const answers = [];
    for (const token of ['no-such-token', spent, expired]) {
      const res = await http().post('/api/v1/auth/password/reset').send({ token, password: 'another password' });
      answers.push({ status: res.status, body: withoutRequestId(res.body) });
    }
    for (const answer of answers) expect(answer).toEqual(answers[0]);
    expect(answers[0]!.status).toBe(401);
    expect(answers[0]!.body.code).toBe('TOKEN_INVALID');
    expect((await login({ email: other.email, password: 'another password' })).status).toBe(401);
  });

  it('makes an invited user active with an invitation token', async () => {
    const invited = await addUser(app, acme, { status: 'invited', password: null });
    const token = await tokenFor(invited.id, 'invitation');
    expect((await login({ email: invited.email, password: 'my first password' })).status).toBe(401);
    await http().post('/api/v1/auth/password/reset').send({ token, password: 'my first password' }).expect(204);
    expect((await login({ email: invited.email, password: 'my first password' })).status).toBe(200);
  });

  it('refuses a deactivated user with 409 and leaves the token unspent', async () => {
    const user = await addUser(app, acme, { status: 'deactivated' });
    const token = await tokenFor(user.id);
    const res = await http().post('/api/v1/auth/password/reset').send({ token, password: 'the new password' });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('INVALID_STATE');
    const { rows } = await app.services.db.pool.query('select used_at from set_password_tokens where user_id = $1', [
      user.id,
    ]);
    expect(rows[0].used_at).toBeNull();
  });

  it('applies the password policy without spending the token', async () => {
    const user = await addUser(app, acme);
    const token = await tokenFor(user.id);
    const res = await http().post('/api/v1/auth/password/reset').send({ token, password: 'short' });
    expect(res.status).toBe(422);
    await http().post('/api/v1/auth/password/reset').send({ token, password: 'long enough now' }).expect(204);
  });

  it('limits 20 attempts per asking client address per window', async () => {
    const user = await addUser(app, acme);
    for (let i = 0; i < 20; i++) {
      expect(
        (
          await http()
            .post('/api/v1/auth/password/reset')
            .set('X-Forwarded-For', '192.0.2.70')
            .send({ token: `guess-${i}`, password: 'whatever it is' })
        ).status,
      ).toBe(401);
    }
    const token = await tokenFor(user.id);
    const refused = await http()
      .post('/api/v1/auth/password/reset')
      .set('X-Forwarded-For', '192.0.2.70')
      .send({ token, password: 'the new password' });
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('RATE_LIMITED');
    await http()
      .post('/api/v1/auth/password/reset')
      .set('X-Forwarded-For', '192.0.2.71')
      .send({ token, password: 'the new password' })
      .expect(204);
  });

  it('takes exactly { token, password }', async () => {
    expect(
      (await http().post('/api/v1/auth/password/reset').send({ token: 'x', newPassword: 'long enough now' })).status,
    ).toBe(422);
  });
});
