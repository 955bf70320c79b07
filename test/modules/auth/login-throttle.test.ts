import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { addUser, clearAttempts } from './fixtures.ts';

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
  instance.http('acme.localhost').post('/api/v1/auth/login').set('X-Forwarded-For', source).send({ email: body.email, password: body.password });

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
    await app.services.db.pool.query(`update auth_attempts set at = at - interval '15 minutes 1 second' where source = '192.0.2.30'`);
    expect((await loginAt(app, user, '192.0.2.30')).status).toBe(200);
  });

  it('is one counter shared by every replica', async () => {
    await clearAttempts(app);
    const user = await addUser(app, acme);
    for (let i = 0; i < 5; i++) expect((await loginAt(app, { email: user.email, password: 'wrong' }, '192.0.2.40')).status).toBe(401);
    for (let i = 0; i < 5; i++) expect((await loginAt(replica, { email: user.email, password: 'wrong' }, '192.0.2.40')).status).toBe(401);
    expect((await loginAt(app, user, '192.0.2.40')).status).toBe(429);
    expect((await loginAt(replica, user, '192.0.2.40')).status).toBe(429);
  });
});

describe('soft delay', () => {
  /**
   * Transactions on the test database, other than the one asking, open for 300 ms or more: a
   * login holding one through its delay is sampled 700 ms in, while the worker's own short
   * transactions (the relay, pg-boss) come and go within milliseconds.
   */
  async function openTransactions(): Promise<number> {
    const { rows } = await app.services.db.pool.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid() and xact_start is not null
          and xact_start < clock_timestamp() - interval '300 milliseconds'`,
    );
    return rows[0]!.n;
  }

  it('slows an account attacked from more than 3 addresses by 2 seconds, with no transaction open meanwhile, instead of locking it', async () => {
    await clearAttempts(app);
    const user = await addUser(app, acme);
    for (const source of ['198.51.100.1', '198.51.100.2', '198.51.100.3']) {
      await loginAt(app, { email: user.email, password: 'wrong password' }, source);
    }
    // Three sources: no delay yet.
    let started = performance.now();
    expect((await loginAt(app, user, '198.51.100.50')).status).toBe(200);
    expect(performance.now() - started).toBeLessThan(1500);

    await loginAt(app, { email: user.email, password: 'wrong password' }, '198.51.100.4');
    started = performance.now();
    const pending = loginAt(app, user, '198.51.100.50').then((res) => res);
    await new Promise((resolve) => setTimeout(resolve, 700));
    const openDuringDelay = await openTransactions();
    const res = await pending;
    const elapsed = performance.now() - started;
    expect(res.status).toBe(200);
    expect(elapsed).toBeGreaterThanOrEqual(2000);
    expect(openDuringDelay).toBe(0);
    // Other accounts are not slowed down.
    const other = await addUser(app, acme);
    started = performance.now();
    expect((await loginAt(app, other, '198.51.100.50')).status).toBe(200);
    expect(performance.now() - started).toBeLessThan(1500);
  });
});
