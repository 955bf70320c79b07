import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import argon2 from 'argon2';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { hashSecret } from '../../../framework/access/session-cookie.ts';
import { DUMMY_HASH, hashPassword, passwordPolicyViolation, verifyPassword } from '../../../modules/user/passwords.ts';
import { lastSentAt, mintSetPasswordToken, redeemSetPasswordToken } from '../../../modules/auth/set-password-tokens.ts';
import { setPasswordLink } from '../../../modules/auth/links.ts';

let app: TestApp;
let acme: TenantRef;
let globex: TenantRef;
beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'acme');
  globex = await createCustomer(app, 'globex', 'globex.example.com');
});
afterAll(async () => {
  await app?.close();
});

describe('password hashing', () => {
  it('hashes with argon2id at no less than m=19456 KiB, t=2, p=1 and verifies', async () => {
    const hash = await hashPassword('correct horse');
    expect(hash).toMatch(/^\$argon2id\$/);
    const params = Object.fromEntries(
      hash
        .split('$')[3]!
        .split(',')
        .map((kv) => kv.split('=')),
    );
    expect(Number(params.m)).toBeGreaterThanOrEqual(19456);
    expect(Number(params.t)).toBeGreaterThanOrEqual(2);
    expect(Number(params.p)).toBeGreaterThanOrEqual(1);
    expect(await verifyPassword(app.services.passwordVerifier, hash, 'correct horse')).toBe(true);
    expect(await verifyPassword(app.services.passwordVerifier, hash, 'wrong horse')).toBe(false);
    expect(await verifyPassword(app.services.passwordVerifier, null, 'correct horse')).toBe(false);
  });

  it('keeps a dummy hash with the same parameters that no password matches', async () => {
    expect(DUMMY_HASH.split('$').slice(0, 4)).toEqual((await hashPassword('x'.repeat(8))).split('$').slice(0, 4));
    expect(argon2.needsRehash(DUMMY_HASH, { memoryCost: 19456, timeCost: 2, parallelism: 1 })).toBe(false);
    expect(await verifyPassword(app.services.passwordVerifier, DUMMY_HASH, '')).toBe(false);
  });

  it('enforces 8..1024 characters', () => {
    expect(passwordPolicyViolation('1234567')).toMatch(/at least 8/);
    expect(passwordPolicyViolation('12345678')).toBeUndefined();
    expect(passwordPolicyViolation('x'.repeat(1024))).toBeUndefined();
    expect(passwordPolicyViolation('x'.repeat(1025))).toMatch(/at most 1024/);
  });
});

describe('set-password tokens', () => {
  it('stores only the SHA-256, keeps one pending token per person and redeems once', async () => {
    const { userId } = await signInAs(app, acme, []);
    const first = await app.services.transactions.run(acme, (ctx) => mintSetPasswordToken(ctx, userId));
    const second = await app.services.transactions.run(acme, (ctx) => mintSetPasswordToken(ctx, userId, 'reset'));
    expect(second).not.toBe(first);
    const rows = await app.services.transactions.run(
      acme,
      async (ctx) =>
        (
          await sql<{
            token_hash: Buffer;
            used_at: Date | null;
          }>`select token_hash, used_at from set_password_tokens where user_id = ${userId}`.execute(ctx.db)
        ).rows,
    );
    expect(rows).toHaveLength(1);
    expect(Buffer.compare(rows[0]!.token_hash, hashSecret(second))).toBe(0);
    // The replaced token no longer works; the pending one works exactly once.
    expect(await app.services.transactions.run(acme, (ctx) => redeemSetPasswordToken(ctx, first))).toBeUndefined();
    expect(await app.services.transactions.run(acme, (ctx) => redeemSetPasswordToken(ctx, second))).toEqual({ userId });
    expect(await app.services.transactions.run(acme, (ctx) => redeemSetPasswordToken(ctx, second))).toBeUndefined();
    // After a redemption a new pending token can be minted beside the spent one.
    const third = await app.services.transactions.run(acme, (ctx) => mintSetPasswordToken(ctx, userId));
    expect(await app.services.transactions.run(acme, (ctx) => redeemSetPasswordToken(ctx, third))).toEqual({ userId });
  });

  it('refuses an expired token and a token of another tenant', async () => {
    const { userId } = await signInAs(app, acme, []);
    const raw = await app.services.transactions.run(acme, (ctx) => mintSetPasswordToken(ctx, userId, 'reset'));
    expect(await app.services.transactions.run(globex, (ctx) => redeemSetPasswordToken(ctx, raw))).toBeUndefined();
    await app.services.transactions.run(acme, (ctx) =>
      sql`update set_password_tokens set expires_at = now() - interval '1 second' where user_id = ${userId}`.execute(
        ctx.db,
      ),
    );
    expect(await app.services.transactions.run(acme, (ctx) => redeemSetPasswordToken(ctx, raw))).toBeUndefined();
  });

  it('expires a reset token after 24 hours and an invitation after 7 days', async () => {
    const { userId } = await signInAs(app, acme, []);
    const lifetime = async () =>
      app.services.transactions.run(acme, async (ctx) => {
        const { rows } = await sql<{ hours: number }>`
          select round(extract(epoch from expires_at - created_at) / 3600) :: int as hours
            from set_password_tokens where user_id = ${userId} and used_at is null`.execute(ctx.db);
        return rows[0]!.hours;
      });
    await app.services.transactions.run(acme, (ctx) => mintSetPasswordToken(ctx, userId, 'reset'));
    expect(await lifetime()).toBe(24);
    await app.services.transactions.run(acme, (ctx) => mintSetPasswordToken(ctx, userId));
    expect(await lifetime()).toBe(7 * 24);
  });

  it('reports when a link was last sent', async () => {
    const { userId } = await signInAs(app, acme, []);
    expect(await app.services.transactions.run(acme, (ctx) => lastSentAt(ctx, userId))).toBeUndefined();
    const before = Date.now();
    await app.services.transactions.run(acme, (ctx) => mintSetPasswordToken(ctx, userId, 'reset'));
    const sent = await app.services.transactions.run(acme, (ctx) => lastSentAt(ctx, userId));
    expect(sent!.getTime()).toBeGreaterThan(before - 5_000);
  });
});

describe('set-password link', () => {
  it('is built on the primary host, http for a local name and https otherwise', async () => {
    const link = (tenant: TenantRef, token: string) =>
      app.services.transactions.run(tenant, (ctx) => setPasswordLink(ctx, app.services, token));
    expect(await link(acme, 'a/b+c')).toBe(
      `http://acme.localhost:${app.config.server.port}/auth/reset?token=a%2Fb%2Bc`,
    );
    await app.services.db.pool.query(
      `insert into tenant_hosts (host, tenant_id) values ('www.globex.example.com', $1)`,
      [globex.id],
    );
    expect(await link(globex, 'tok')).toBe('https://globex.example.com/auth/reset?token=tok');
  });
});
