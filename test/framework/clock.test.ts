import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { DAY_MS, HOUR_MS, MINUTE_MS, SettableClock, systemClock } from '../../framework/clock.ts';
import type { MemoryMailbox } from '../../framework/mail/mailer.ts';
import { mintSetPasswordToken, redeemSetPasswordToken } from '../../modules/auth/set-password-tokens.ts';
import { addUser, clearAttempts, deliverOutbox } from '../modules/auth/fixtures.ts';
import { ROOT } from '../../framework/app.ts';

const clock = new SettableClock();
let app: TestApp;
let acme: TenantRef;
beforeAll(async () => {
  app = await startTestApp({ clock, role: 'all', startWorker: false });
  acme = await createCustomer(app, 'clock-acme');
});
afterEach(() => clock.reset());
afterAll(async () => {
  await app?.close();
});

const me = (cookie: string) => app.http('clock-acme.localhost').get('/api/v1/auth/me').set('Cookie', cookie);
const login = (body: { email: string; password: string }, source: string) =>
  app
    .http('clock-acme.localhost')
    .post('/api/v1/auth/login')
    .set('X-Forwarded-For', source)
    .send({ email: body.email, password: body.password });

describe('one clock', () => {
  it('is a settable service: set, advanced and reset, it keeps running from where it was set', () => {
    const at = new Date('2031-05-04T03:02:01Z');
    const settable = new SettableClock(at);
    expect(Math.abs(settable.now().getTime() - at.getTime())).toBeLessThan(1000);
    settable.advance(DAY_MS);
    expect(Math.abs(settable.now().getTime() - at.getTime() - DAY_MS)).toBeLessThan(1000);
    settable.reset();
    expect(Math.abs(settable.now().getTime() - systemClock.now().getTime())).toBeLessThan(1000);
    expect(app.services.clock).toBe(clock);
  });

  it('gives every transaction its time, read once from the clock when it opens', async () => {
    clock.set(new Date('2030-01-01T00:00:00Z'));
    const seen = await app.services.transactions.run(acme, async (ctx) => {
      const first = ctx.now;
      clock.advance(HOUR_MS);
      return { first, second: ctx.now };
    });
    expect(seen.first).toBe(seen.second);
    expect(Math.abs(seen.first.getTime() - Date.parse('2030-01-01T00:00:00Z'))).toBeLessThan(1000);
  });

  it('ends a session by the clock: 31 days ahead, the session no longer resolves', async () => {
    const { cookie } = await signInAs(app, acme, []);
    expect((await me(cookie)).status).toBe(200);
    clock.advance(31 * DAY_MS);
    const res = await me(cookie);
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('AUTH_REQUIRED');
    clock.reset();
    expect((await me(cookie)).status).toBe(200);
  });

  it("touches a session with the clock's time, not the database's", async () => {
    const { cookie, userId } = await signInAs(app, acme, []);
    clock.advance(10 * MINUTE_MS);
    expect((await me(cookie)).status).toBe(200);
    const { rows } = await app.services.db.pool.query<{ ahead: boolean }>(
      `select last_seen_at > now() + interval '9 minutes' as ahead from sessions where user_id = $1`,
      [userId],
    );
    expect(rows[0]!.ahead).toBe(true);
  });

  it('opens a session whose lifetime counts from the clock', async () => {
    const user = await addUser(app, acme);
    clock.set(new Date('2030-06-01T12:00:00Z'));
    expect((await login(user, '192.0.2.90')).status).toBe(200);
    const { rows } = await app.services.db.pool.query<{ created_at: Date; expires_at: Date }>(
      'select created_at, expires_at from sessions where user_id = $1',
      [user.id],
    );
    expect(Math.abs(rows[0]!.created_at.getTime() - Date.parse('2030-06-01T12:00:00Z'))).toBeLessThan(1000);
    expect(rows[0]!.expires_at.getTime() - rows[0]!.created_at.getTime()).toBe(30 * DAY_MS);
  });

  it('slides the login throttle window on the clock: 16 minutes ahead, the window is empty', async () => {
    await clearAttempts(app);
    const user = await addUser(app, acme);
    for (let i = 0; i < 10; i++)
      expect((await login({ email: user.email, password: 'wrong password' }, '192.0.2.91')).status).toBe(401);
    expect((await login(user, '192.0.2.91')).status).toBe(429);
    clock.advance(16 * MINUTE_MS);
    expect((await login(user, '192.0.2.91')).status).toBe(200);
  });

  it('expires a set-password token by the clock', async () => {
    const user = await addUser(app, acme, { status: 'invited', password: null });
    const early = await app.services.transactions.run(acme, (ctx) => mintSetPasswordToken(ctx, user.id, 'reset'));
    clock.advance(23 * HOUR_MS);
    expect(await app.services.transactions.run(acme, (ctx) => redeemSetPasswordToken(ctx, early))).toEqual({
      userId: user.id,
    });

    clock.reset();
    const late = await app.services.transactions.run(acme, (ctx) => mintSetPasswordToken(ctx, user.id, 'reset'));
    clock.advance(25 * HOUR_MS);
    expect(await app.services.transactions.run(acme, (ctx) => redeemSetPasswordToken(ctx, late))).toBeUndefined();
    const res = await app
      .http('clock-acme.localhost')
      .post('/api/v1/auth/password/reset')
      .send({ token: late, password: 'a new password' });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('TOKEN_INVALID');
  });

  it('reissues a reset link only once the clock is five minutes past the last one', async () => {
    const user = await addUser(app, acme);
    const mailbox = app.services.mailer as MemoryMailbox;
    const mails = () => mailbox.messages.filter((m) => m.to === user.email).length;
    const forgot = async () => {
      const res = await app
        .http('clock-acme.localhost')
        .post('/api/v1/auth/password/forgot')
        .set('X-Forwarded-For', '192.0.2.92')
        .send({ email: user.email });
      expect(res.status).toBe(202);
      await deliverOutbox(app);
    };
    await forgot();
    expect(mails()).toBe(1);
    clock.advance(4 * MINUTE_MS);
    await forgot();
    expect(mails()).toBe(1);
    clock.advance(2 * MINUTE_MS);
    await forgot();
    expect(mails()).toBe(2);
  });

  it("stamps throttle attempts with the clock's time", async () => {
    await clearAttempts(app);
    clock.set(new Date('2032-02-02T02:02:02Z'));
    await login({ email: 'nobody@example.test', password: 'wrong password' }, '192.0.2.93');
    const { rows } = await app.services.transactions.run(acme, (ctx) =>
      sql<{ at: Date }>`select at from auth_attempts where source = '192.0.2.93'`.execute(ctx.db),
    );
    expect(rows).toHaveLength(1);
    expect(Math.abs(rows[0]!.at.getTime() - Date.parse('2032-02-02T02:02:02Z'))).toBeLessThan(5000);
  });
});

/** Source files of the framework and the modules, as the rule covers them. */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

// Reading the time outside the clock is allowed only where nothing is decided by it: the clock
// itself, stamps of when something happened, cache ageing and waiting loops.
const ALLOWED: Record<string, RegExp[]> = {
  'framework/clock.ts': [/Date\.now\(\)/, /new Date\(\)/, /now\(\): Date/],
  // The clock's contract declares now(); it reads nothing.
  'framework/contracts/clock.ts': [/^\s*now\(\): Date;/],
  // A replica's lag is its own clock against its last replayed commit: what is measured is the
  // replica's delay, not a business time.
  'framework/context/replica-reads.ts': [/now\(\) - pg_last_xact_replay_timestamp\(\)/],
  'framework/mail/mailer.ts': [/at: new Date\(\)/],
  'framework/db/embedded.ts': [/Date\.now\(\)/],
  'framework/context/public-read-cache.ts': [/now = Date\.now\(\)/],
  'framework/db/migrate.ts': [/default now\(\)/],
  'framework/events/relay.ts': [/relayed_at = now\(\)/, /relayed_at < now\(\)/],
  // Stamps of when something happened: a span's end, a job run's finish for the metrics.
  'framework/observability/tracing.ts': [/const end = Date\.now\(\)/],
  'framework/events/jobs.ts': [/observeJob\(.*new Date\(\)\)/],
  // The generator writes SQL column defaults into a migration; it reads no time itself.
  'framework/schema/desired.ts': [/defaultExpr: 'now\(\)'/],
};
const STAMPS = /\b(updated_at|deleted_at|created_at)\s*=\s*now\(\)/g;

describe('no module reads the time around the clock', () => {
  it('finds no Date.now(), new Date() or SQL now() deciding anything in framework/ or modules/', () => {
    const offences: string[] = [];
    for (const file of [...sources(join(ROOT, 'framework')), ...sources(join(ROOT, 'modules'))]) {
      const path = relative(ROOT, file);
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          const code = line.replace(STAMPS, '').replace(/^\s*(\/\/|\/\*|\*).*$/, '');
          if (!/Date\.now\(\)|new Date\(\)|(?<![.\w])now\(\)/.test(code)) return;
          if ((ALLOWED[path] ?? []).some((allowed) => allowed.test(code))) return;
          offences.push(`${path}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(offences).toEqual([]);
  });
});
