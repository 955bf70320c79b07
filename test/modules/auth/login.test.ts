import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { addUser, clearAttempts, outbox, sessionCookieOf } from './fixtures.ts';
import { withoutRequestId } from '../../helpers/problems.ts';
import { ARGON2_OPTIONS } from '../../../modules/user/passwords.ts';
import { argon2Verifier, type PasswordVerifier } from '../../../framework/access/password-verifier.ts';

/** The hashes the app verified against, in order: argon2's own verifier, counted around. */
const verifications: string[] = [];
const countingVerifier: PasswordVerifier = {
  verify: (hash, plain) => {
    verifications.push(hash);
    return argon2Verifier.verify(hash, plain);
  },
};

/** An argon2 hash's algorithm and parameters: `$argon2id$v=19$m=19456,t=2,p=1$salt$hash`. */
function parametersOf(hash: string): Record<string, string> {
  const [, algorithm, version, parameters] = hash.split('$');
  return {
    algorithm: algorithm!,
    ...Object.fromEntries([version!, ...parameters!.split(',')].map((kv) => kv.split('=') as [string, string])),
  };
}

let app: TestApp;
let acme: TenantRef;
beforeAll(async () => {
  app = await startTestApp({ passwordVerifier: countingVerifier });
  acme = await createCustomer(app, 'acme');
  await app.services.transactions.run(acme, (ctx) =>
    ctx.db
      .insertInto('roles' as never)
      .values({ name: 'editor', permissions: ['user:read', 'role:manage'] } as never)
      .execute(),
  );
});
afterAll(async () => {
  await app?.close();
});

const http = () => app.http('acme.localhost');

describe('POST /api/v1/auth/login', () => {
  it('answers the Identity, sets the session cookie and publishes auth.logged_in with method password', async () => {
    const user = await addUser(app, acme, { roles: ['editor', 'member'], displayName: 'Ada' });
    const res = await http()
      .post('/api/v1/auth/login')
      .send({ email: user.email.toUpperCase(), password: user.password });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      userId: user.id,
      email: user.email,
      displayName: 'Ada',
      roles: ['editor', 'member'],
      permissions: ['role:manage', 'user:read'],
    });
    expect(sessionCookieOf(res)).toMatch(/^app_session=[A-Za-z0-9_-]{43}$/);
    const events = (await outbox(app, 'auth.logged_in')).filter((e) => e.payload.userId === user.id);
    expect(events).toHaveLength(1);
    expect(events[0]!.payload).toEqual({ method: 'password', userId: user.id });
    expect(events[0]!.actor_id).toBe(user.id);
  });

  it('gives a fresh session id every time and ends the session the request carried', async () => {
    const user = await addUser(app, acme);
    const first = sessionCookieOf(
      await http().post('/api/v1/auth/login').send({ email: user.email, password: user.password }),
    )!;
    const second = sessionCookieOf(
      await http().post('/api/v1/auth/login').set('Cookie', first).send({ email: user.email, password: user.password }),
    )!;
    const third = sessionCookieOf(
      await http().post('/api/v1/auth/login').send({ email: user.email, password: user.password }),
    )!;
    expect(new Set([first, second, third]).size).toBe(3);
    expect((await http().get('/api/v1/auth/me').set('Cookie', first)).status).toBe(401);
    expect((await http().get('/api/v1/auth/me').set('Cookie', second)).status).toBe(200);
    expect((await http().get('/api/v1/auth/me').set('Cookie', third)).status).toBe(200);
  });

  it('answers the same 401 ErrCredentials for a wrong password, an unknown address, an invited and a deactivated user', async () => {
    await clearAttempts(app);
    const active = await addUser(app, acme);
    const invited = await addUser(app, acme, { status: 'invited', password: null });
    const invitedWithPassword = await addUser(app, acme, { status: 'invited' });
    const deactivated = await addUser(app, acme, { status: 'deactivated' });
    const attempts = [
      { email: active.email, password: 'wrong password' },
      { email: 'nobody@example.test', password: 'whatever it is' },
      { email: invited.email, password: 'anything at all' },
      { email: invitedWithPassword.email, password: invitedWithPassword.password },
      { email: deactivated.email, password: deactivated.password },
    ];
    const answers = [];
    for (const body of attempts) {
      const res = await http().post('/api/v1/auth/login').send(body);
      expect(res.headers['set-cookie']).toBeUndefined();
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      answers.push({ status: res.status, body: withoutRequestId(res.body) });
    }
    for (const answer of answers) expect(answer).toEqual(answers[0]);
    expect(answers[0]!.status).toBe(401);
    expect(answers[0]!.body.code).toBe('ErrCredentials');
  });

  it('writes auth.login_failed in a transaction of its own, with no address in it', async () => {
    await clearAttempts(app);
    const user = await addUser(app, acme);
    const before = (await outbox(app, 'auth.login_failed')).length;
    await http().post('/api/v1/auth/login').send({ email: user.email, password: 'wrong password' }).expect(401);
    await http()
      .post('/api/v1/auth/login')
      .send({ email: 'ghost@example.test', password: 'wrong password' })
      .expect(401);
    const failed = (await outbox(app, 'auth.login_failed')).slice(before);
    expect(failed.map((e) => e.payload)).toEqual([{ userId: user.id }, { userId: null }]);
    expect(JSON.stringify(failed)).not.toContain('@example.test');
    // Nothing else of the refused request survived: no session, no auth.logged_in.
    expect((await outbox(app, 'auth.logged_in')).filter((e) => e.payload.userId === user.id)).toHaveLength(0);
  });

  // The same work, shown structurally rather than timed: every refusal runs exactly one argon2id
  // verification, with the parameters the passwords are stored with, counted through the app's
  // password verifier (AppOptions.passwordVerifier, the seam every password check goes through).
  // A refusal that skipped the verification would show none; one that verified twice, two. What it
  // costs on the wall clock is measured by npm run bench -- --only login-refusals, as ratios.
  it('does the same work for all four refusals: exactly one argon2id verification, with the same parameters', async () => {
    const active = await addUser(app, acme);
    const invited = await addUser(app, acme, { status: 'invited', password: null });
    const deactivated = await addUser(app, acme, { status: 'deactivated' });
    const cases: Record<string, { email: string; password: string }> = {
      wrongPassword: { email: active.email, password: 'wrong password' },
      unknownAddress: { email: 'nobody-here@example.test', password: 'wrong password' },
      invited: { email: invited.email, password: 'wrong password' },
      deactivated: { email: deactivated.email, password: deactivated.password },
    };
    const stored = {
      algorithm: 'argon2id',
      v: '19',
      m: String(ARGON2_OPTIONS.memoryCost),
      t: String(ARGON2_OPTIONS.timeCost),
      p: String(ARGON2_OPTIONS.parallelism),
    };
    await clearAttempts(app);
    for (const [name, body] of Object.entries(cases)) {
      verifications.length = 0;
      const res = await http().post('/api/v1/auth/login').send(body);
      expect(res.status, name).toBe(401);
      expect(res.body.code, name).toBe('ErrCredentials');
      expect(verifications.map(parametersOf), name).toEqual([stored]);
    }
    // And a sign-in that succeeds runs the same one.
    verifications.length = 0;
    expect(
      (await http().post('/api/v1/auth/login').send({ email: active.email, password: active.password })).status,
    ).toBe(200);
    expect(verifications.map(parametersOf)).toEqual([stored]);
  });
});

describe('cross-site login', () => {
  it('refuses a post another site sent (Sec-Fetch-Site or Origin) with 403 AUTH_CROSS_SITE', async () => {
    await clearAttempts(app);
    const user = await addUser(app, acme);
    const body = { email: user.email, password: user.password };
    for (const [name, value] of [
      ['Sec-Fetch-Site', 'cross-site'],
      ['Sec-Fetch-Site', 'same-site'],
      ['Origin', 'https://evil.example'],
      ['Origin', 'http://globex.localhost'],
      ['Origin', 'null'],
    ] as const) {
      const res = await http().post('/api/v1/auth/login').set(name, value).send(body);
      expect(res.status, `${name}: ${value}`).toBe(403);
      expect(res.body.code).toBe('AUTH_CROSS_SITE');
      expect(res.headers['set-cookie']).toBeUndefined();
    }
  });

  it('accepts the same site, and a client that sends neither header', async () => {
    const user = await addUser(app, acme);
    const body = { email: user.email, password: user.password };
    expect((await http().post('/api/v1/auth/login').set('Sec-Fetch-Site', 'same-origin').send(body)).status).toBe(200);
    expect(
      (await http().post('/api/v1/auth/login').set('Origin', 'http://acme.localhost:3000').send(body)).status,
    ).toBe(200);
    expect((await http().post('/api/v1/auth/login').send(body)).status).toBe(200);
  });
});

describe('login body', () => {
  it('takes exactly { email, password }', async () => {
    const unknown = await http()
      .post('/api/v1/auth/login')
      .send({ email: 'a@example.test', password: 'x', remember: true });
    expect(unknown.status).toBe(422);
    expect(unknown.body.code).toBe('VALIDATION_FAILED');
    const missing = await http().post('/api/v1/auth/login').send({ username: 'a@example.test', password: 'x' });
    expect(missing.status).toBe(422);
  });
});
