import { beforeEach, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { useTestApp } from '../../helpers/use-test-app.ts';
import { insideTransactionBody } from '../../../framework/db/pool.ts';
import {
  argon2Hasher,
  argon2Verifier,
  type PasswordHasher,
  type PasswordVerifier,
} from '../../../framework/access/password-verifier.ts';
import { hashPassword } from '../../../modules/user/passwords.ts';
import { mintSetPasswordToken } from '../../../modules/auth/set-password-tokens.ts';
import { addUser, clearAttempts, sessionCookieOf } from './fixtures.ts';

// argon2id costs tens of milliseconds of CPU, more under load: a request that hashes or verifies a
// password inside a transaction holds a pool connection all that time, and a few sign-ins at once
// exhaust the pool (503 DB_BUSY). The app's own verifier and hasher, watched through the documented
// seams (AppOptions.passwordVerifier and passwordHasher), record whether the request that calls them
// is inside a transaction's body at that moment (the pool's own record, framework/db/pool.ts).

/** Each password operation a request ran, and whether a transaction of its was open meanwhile. */
const calls: { op: 'verify' | 'hash'; inTransaction: boolean }[] = [];
/** Run during the next verification, with no transaction open: what changes meanwhile. */
let duringVerification: (() => Promise<void>) | undefined;

const watchedVerifier: PasswordVerifier = {
  async verify(hash, plain) {
    calls.push({ op: 'verify', inTransaction: insideTransactionBody() });
    const meanwhile = duringVerification;
    duringVerification = undefined;
    await meanwhile?.();
    return argon2Verifier.verify(hash, plain);
  },
};
const watchedHasher: PasswordHasher = {
  hash(plain) {
    calls.push({ op: 'hash', inTransaction: insideTransactionBody() });
    return argon2Hasher.hash(plain);
  },
};

const t = useTestApp({ customers: ['acme'], passwordVerifier: watchedVerifier, passwordHasher: watchedHasher });
const http = () => t.app.http('acme.localhost');

beforeEach(async () => {
  calls.length = 0;
  duringVerification = undefined;
  await clearAttempts(t.app);
});

const login = (email: string, password: string) => http().post('/api/v1/auth/login').send({ email, password });

/** Stores a hash straight into the user's row, as a password set by another request would. */
const storeHash = (userId: string, hash: string) =>
  t.app.services.transactions.run(t.acme, (ctx) =>
    ctx.db.executeQuery(CompiledQuery.raw('update users set password_hash = $1 where id = $2', [hash, userId])),
  );

describe('a password is hashed and verified with no transaction open', () => {
  it('on a sign-in that succeeds and on each refusal, once per request', async () => {
    const user = await addUser(t.app, t.acme);
    expect((await login(user.email, user.password)).status).toBe(200);
    expect((await login(user.email, 'wrong password')).status).toBe(401);
    expect((await login('nobody@example.test', 'whatever it is')).status).toBe(401);
    expect(calls).toEqual([
      { op: 'verify', inTransaction: false },
      { op: 'verify', inTransaction: false },
      { op: 'verify', inTransaction: false },
    ]);
  });

  it('on a password change, its verification and its new hash; and on a wrong current password', async () => {
    const user = await addUser(t.app, t.acme);
    const cookie = sessionCookieOf(await login(user.email, user.password))!;
    calls.length = 0;
    const refused = await http()
      .post('/api/v1/auth/password')
      .set('Cookie', cookie)
      .send({ currentPassword: 'not it at all', newPassword: 'a brand new secret' });
    expect(refused.status).toBe(422);
    expect(calls).toEqual([{ op: 'verify', inTransaction: false }]);
    calls.length = 0;
    const changed = await http()
      .post('/api/v1/auth/password')
      .set('Cookie', cookie)
      .send({ currentPassword: user.password, newPassword: 'a brand new secret' });
    expect(changed.status).toBe(204);
    expect(calls).toEqual([
      { op: 'verify', inTransaction: false },
      { op: 'hash', inTransaction: false },
    ]);
    expect((await login(user.email, 'a brand new secret')).status).toBe(200);
  });

  it('on a reset with a mailed link', async () => {
    const user = await addUser(t.app, t.acme);
    const token = await t.app.services.transactions.run(t.acme, (ctx) => mintSetPasswordToken(ctx, user.id, 'reset'));
    const res = await http().post('/api/v1/auth/password/reset').send({ token, password: 'a reset secret here' });
    expect(res.status).toBe(204);
    expect(calls).toEqual([{ op: 'hash', inTransaction: false }]);
  });
});

describe('what changes while the password is verified', () => {
  it('a sign-in whose password was replaced meanwhile is refused like a wrong password, and counted', async () => {
    const user = await addUser(t.app, t.acme);
    const replaced = await hashPassword('replaced meanwhile');
    duringVerification = () => storeHash(user.id, replaced).then(() => undefined);
    const res = await login(user.email, user.password);
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('ErrCredentials');
    expect(sessionCookieOf(res)).toBeUndefined();
    const { rows } = await t.app.services.db.pool.query<{ n: number }>(
      "select count(*) as n from auth_attempts where kind = 'login'",
    );
    expect(rows[0]!.n).toBe(1);
  });

  it('a sign-in of a user deactivated meanwhile is refused', async () => {
    const user = await addUser(t.app, t.acme);
    duringVerification = async () => {
      await t.app.services.transactions.run(t.acme, (ctx) =>
        ctx.db.executeQuery(CompiledQuery.raw("update users set status = 'deactivated' where id = $1", [user.id])),
      );
    };
    const res = await login(user.email, user.password);
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('ErrCredentials');
  });

  it('a password change whose current password was replaced meanwhile stores nothing', async () => {
    const user = await addUser(t.app, t.acme);
    const cookie = sessionCookieOf(await login(user.email, user.password))!;
    const replaced = await hashPassword('replaced meanwhile');
    duringVerification = () => storeHash(user.id, replaced).then(() => undefined);
    const res = await http()
      .post('/api/v1/auth/password')
      .set('Cookie', cookie)
      .send({ currentPassword: user.password, newPassword: 'a brand new secret' });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([
      { pointer: '/body/currentPassword', message: 'does not match the password in force' },
    ]);
    expect((await login(user.email, 'replaced meanwhile')).status).toBe(200);
  });
});
