import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { addUser, clearAttempts } from './fixtures.ts';
import { SOFT_DELAY_MS } from '../../../modules/auth/throttle.ts';

let app: TestApp;
let replica: TestApp;
let acme: TenantRef;
beforeAll(async () => {
  app = await startTestApp();
  // A second instance of the service on the same database, as a second replica would be.
  replica = await startTestApp({ databaseUrl: app.databaseUrl });
  acme = await createCustomer(app, 'acme');
});
afterAll(async () => {
  await replica?.close();
  await app?.close();
});

const loginAt = (instance: TestApp, body: { email: string; password: string }, source: string) =>
  instance
    .http('acme.localhost')
    .post('/api/v1/auth/login')
    .set('X-Forwarded-For', source)
    .send({ email: body.email, password: body.password });

describe('failed-login limit', () => {
  it('answers 429 ErrTooManyAttempts after 10 failures from one client address in the window, even to the right password', async () => {
    await clearAttempts(app);
    const user = await addUser(app, acme);
    for (let i = 0; i < 10; i++) {
      // Unknown addresses count like known ones: the 429 tells nothing about who exists.
      const email = i % 2 === 0 ? user.email : `nobody${i}@example.test`;
      expect((await loginAt(app, { email, password: 'wrong password' }, '192.0.2.10')).status).toBe(401);
    }
    const refused = await loginAt(app, user, '192.0.2.10');
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('ErrTooManyAttempts');
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(Number(refused.headers['retry-after'])).toBe(15 * 60);
    expect(refused.headers['set-cookie']).toBeUndefined();
  });

  it('does not lock the account: the owner signs in from another address', async () => {
    await clearAttempts(app);
    const user = await addUser(app, acme);
    for (let i = 0; i < 10; i++) await loginAt(app, { email: user.email, password: 'wrong password' }, '192.0.2.20');
    expect((await loginAt(app, user, '192.0.2.20')).status).toBe(429);
    expect((await loginAt(app, user, '192.0.2.21')).status).toBe(200);
  });

  it('counts only failures inside the 15-minute window', async () => {
    await clearAttempts(app);
    const user = await addUser(app, acme);
    for (let i = 0; i < 10; i++) await loginAt(app, { email: user.email, password: 'wrong password' }, '192.0.2.30');
    expect((await loginAt(app, user, '192.0.2.30')).status).toBe(429);
    await app.services.db.pool.query(
      `update auth_attempts set at = at - interval '15 minutes 1 second' where source = '192.0.2.30'`,
    );
    expect((await loginAt(app, user, '192.0.2.30')).status).toBe(200);
  });

  it('is one counter shared by every replica', async () => {
    await clearAttempts(app);
    const user = await addUser(app, acme);
    for (let i = 0; i < 5; i++)
      expect((await loginAt(app, { email: user.email, password: 'wrong' }, '192.0.2.40')).status).toBe(401);
    for (let i = 0; i < 5; i++)
      expect((await loginAt(replica, { email: user.email, password: 'wrong' }, '192.0.2.40')).status).toBe(401);
    expect((await loginAt(app, user, '192.0.2.40')).status).toBe(429);
    expect((await loginAt(replica, user, '192.0.2.40')).status).toBe(429);
  });
});

describe('soft delay', () => {
  /**
   * The age in milliseconds of the oldest transaction open on the test database, other than the
   * one asking: a login holding one through its 2-second delay shows one that old, while the
   * login's own short transactions and the worker's (the relay, pg-boss) come and go.
   */
  async function oldestTransactionMs(): Promise<number> {
    const { rows } = await app.services.db.pool.query<{ ms: number | null }>(
      `select (extract(epoch from max(clock_timestamp() - xact_start)) * 1000)::float8 as ms from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid() and xact_start is not null`,
    );
    return rows[0]!.ms ?? 0;
  }

  /**
   * A sign-in timed against a control: a sign-in of an account under no pressure, started at the
   * same moment, so it meets the same machine load. The difference between the two is the delay,
   * whatever else the loaded machine adds to both.
   */
  async function timedAgainstControl(
    body: { email: string; password: string },
    control: { email: string; password: string },
  ) {
    const started = performance.now();
    const timed = (promise: ReturnType<typeof loginAt>) =>
      promise.then((res) => ({ status: res.status, ms: performance.now() - started }));
    const [measured, baseline] = await Promise.all([
      timed(loginAt(app, body, '198.51.100.50')),
      timed(loginAt(app, control, '198.51.100.60')),
    ]);
    expect(baseline.status).toBe(200);
    return { status: measured.status, ms: measured.ms, overControl: measured.ms - baseline.ms };
  }

  it('slows an account attacked from more than 3 addresses by 2 seconds, with no transaction open meanwhile, instead of locking it', async () => {
    await clearAttempts(app);
    const user = await addUser(app, acme);
    const control = await addUser(app, acme);
    for (const source of ['198.51.100.1', '198.51.100.2', '198.51.100.3']) {
      await loginAt(app, { email: user.email, password: 'wrong password' }, source);
    }
    // Three sources: no delay yet (a delayed sign-in would finish SOFT_DELAY_MS after its control).
    const undelayed = await timedAgainstControl(user, control);
    expect(undelayed.status).toBe(200);
    expect(undelayed.overControl).toBeLessThan(SOFT_DELAY_MS / 2);

    await loginAt(app, { email: user.email, password: 'wrong password' }, '198.51.100.4');
    // While the delayed sign-in waits, the oldest open transaction is sampled again and again.
    let waiting = true;
    const delayed = timedAgainstControl(user, control).finally(() => {
      waiting = false;
    });
    let oldest = 0;
    while (waiting) {
      oldest = Math.max(oldest, await oldestTransactionMs());
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const res = await delayed;
    expect(res.status).toBe(200);
    // The delay is a floor: load only ever adds to it.
    expect(res.ms).toBeGreaterThanOrEqual(SOFT_DELAY_MS);
    expect(res.overControl).toBeGreaterThanOrEqual(SOFT_DELAY_MS / 2);
    // A transaction held through the delay would be at least SOFT_DELAY_MS old when it ends.
    expect(oldest, 'no transaction stays open through the delay').toBeLessThan(SOFT_DELAY_MS / 2);
    // Other accounts are not slowed down.
    const other = await addUser(app, acme);
    const unaffected = await timedAgainstControl(other, control);
    expect(unaffected.status).toBe(200);
    expect(unaffected.overControl).toBeLessThan(SOFT_DELAY_MS / 2);
  });
});
