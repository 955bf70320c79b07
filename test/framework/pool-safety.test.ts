import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import { addUser, deliverOutbox, waitFor } from '../modules/auth/fixtures.ts';
import { PoolInsideTransactionError } from '../../framework/db/pool.ts';
import type { MemoryMailbox } from '../../framework/mail/mailer.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

/**
 * Rule: a transaction never waits for a second pool connection. Code inside a tenant transaction
 * cannot check a connection out of the pool; work that must commit on its own runs after the
 * transaction (ctx.onRollback, ctx.afterCommit); an exhausted pool answers 503 DB_BUSY.
 */

const attemptsFrom = async (app: TestApp, tenant: TenantRef, source: string): Promise<number> =>
  app.services.transactions.run(tenant, async (ctx) => {
    const { rows } = await sql<{
      n: number;
    }>`select count(*)::int as n from auth_attempts where kind = 'login' and source = ${source}`.execute(ctx.db);
    return rows[0]!.n;
  });

const wrongCurrentPassword = (app: TestApp, host: string, cookie: string, source: string) =>
  app
    .http(host)
    .post('/api/v1/auth/password')
    .set('Cookie', cookie)
    .set('X-Forwarded-For', source)
    .timeout(5_000)
    .send({ currentPassword: 'certainly not the password', newPassword: 'a brand new secret' });

describe('the pool refuses a checkout from inside a transaction', () => {
  let app: TestApp;
  let acme: TenantRef;
  beforeAll(async () => {
    // Spare connections in the pool: a refusal here is the guard, not an exhausted pool.
    app = await startTestApp({ config: testConfig({ database: { pool_size: 5 } }) });
    acme = await createCustomer(app, 'acme');
  });
  afterAll(async () => {
    await app?.close();
  });

  /**
   * "At once" is measured against a baseline taken in the same test, under the same machine load:
   * an ordinary transaction that runs one statement on its own connection. The refusal does less
   * than that, while a guard that waited for a connection would wait up to the acquisition
   * timeout (database.acquire_timeout_ms) on top of it.
   */
  it('pool.query inside a transaction fails at once with a programming error', async () => {
    const refusals: number[] = [];
    const baselines: number[] = [];
    for (let round = 0; round < 3; round++) {
      let started = performance.now();
      await app.services.transactions.run(acme, (ctx) => sql`select 1`.execute(ctx.db));
      baselines.push(performance.now() - started);
      started = performance.now();
      const inside = app.services.transactions.run(acme, () => app.services.db.pool.query('select 1'));
      await expect(inside).rejects.toBeInstanceOf(PoolInsideTransactionError);
      await expect(inside).rejects.toThrow(/inside a transaction: use the transaction \(ctx\.db\)/);
      refusals.push(performance.now() - started);
    }
    const refusal = Math.min(...refusals);
    const baseline = Math.max(...baselines);
    expect(refusal, `refusal ${refusal.toFixed(1)} ms, an ordinary transaction ${baseline.toFixed(1)} ms`).toBeLessThan(
      baseline + app.config.database.acquire_timeout_ms / 2,
    );
  });

  it('pool.connect, the pool’s kysely instance and a nested transaction are refused the same way', async () => {
    await expect(app.services.transactions.run(acme, () => app.services.db.pool.connect())).rejects.toBeInstanceOf(
      PoolInsideTransactionError,
    );
    await expect(
      app.services.transactions.run(acme, () => app.services.db.kysely.selectFrom('tenants').select('id').execute()),
    ).rejects.toBeInstanceOf(PoolInsideTransactionError);
    await expect(
      app.services.transactions.run(acme, () => app.services.transactions.run(acme, async () => 1)),
    ).rejects.toBeInstanceOf(PoolInsideTransactionError);
  });

  it('so does a callback the transaction body scheduled (a timer)', async () => {
    const later = await app.services.transactions.run(
      acme,
      async () =>
        new Promise<Promise<unknown>>((resolve) =>
          setTimeout(() => resolve(app.services.db.pool.query('select 1').catch((err: unknown) => err)), 1),
        ),
    );
    expect(await later).toBeInstanceOf(PoolInsideTransactionError);
  });

  it('the transaction’s own connection and the pool outside any transaction keep working', async () => {
    expect(
      await app.services.transactions.run(
        acme,
        async (ctx) => (await sql<{ n: number }>`select 2 as n`.execute(ctx.db)).rows[0]!.n,
      ),
    ).toBe(2);
    expect((await app.services.db.pool.query('select 3 as n')).rows[0].n).toBe(3);
  });

  it('ctx.onRollback runs after the rollback, outside the transaction, and the refusal is still what run() throws', async () => {
    const order: string[] = [];
    const refused = app.services.transactions.run(acme, async (ctx) => {
      await sql`insert into widgets (name, size, color) values ('rolled-back', 1, 'red')`.execute(ctx.db);
      ctx.onRollback(async () => {
        // Outside: the pool is usable, and the transaction's insert is gone.
        const { rows } = await app.services.db.pool.query(
          `select count(*)::int as n from widgets where name = 'rolled-back'`,
        );
        order.push(`rolled back, ${rows[0].n} rows`);
      });
      ctx.afterCommit(() => void order.push('committed'));
      throw new Error('refused');
    });
    await expect(refused).rejects.toThrow('refused');
    expect(order).toEqual(['rolled back, 0 rows']);
  });

  it('ctx.afterCommit runs after the commit, outside the transaction, before run() returns', async () => {
    const order: string[] = [];
    const value = await app.services.transactions.run(acme, async (ctx) => {
      await sql`insert into widgets (name, size, color) values ('committed', 1, 'red')`.execute(ctx.db);
      ctx.afterCommit(async () => {
        const { rows } = await app.services.db.pool.query(
          `select count(*)::int as n from widgets where name = 'committed'`,
        );
        order.push(`committed, ${rows[0].n} rows`);
      });
      ctx.onRollback(() => void order.push('rolled back'));
      return 'done';
    });
    expect(value).toBe('done');
    expect(order).toEqual(['committed, 1 rows']);
  });
});

describe('POST /api/v1/auth/password with a wrong currentPassword', () => {
  let one: TestApp;
  let ten: TestApp;
  let acmeOne: TenantRef;
  let acmeTen: TenantRef;
  beforeAll(async () => {
    [one, ten] = await Promise.all([
      startTestApp({ config: testConfig({ database: { pool_size: 1 } }) }),
      // The configuration default.
      startTestApp({ config: testConfig({ database: { pool_size: 10 } }) }),
    ]);
    acmeOne = await createCustomer(one, 'acme');
    acmeTen = await createCustomer(ten, 'acme');
  });
  afterAll(async () => {
    await Promise.all([one?.close(), ten?.close()]);
  });

  it('with a pool of one connection, answers 422 quickly and records the failed attempt', async () => {
    const { cookie } = await signInAs(one, acmeOne, []);
    const started = Date.now();
    const res = await wrongCurrentPassword(one, 'acme.localhost', cookie, '198.51.100.1');
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await attemptsFrom(one, acmeOne, '198.51.100.1')).toBe(1);
  });

  it('ten concurrent callers on the default pool of ten all answer, each attempt recorded', async () => {
    const callers = await Promise.all(Array.from({ length: 10 }, () => signInAs(ten, acmeTen, [])));
    const answers = await Promise.all(
      callers.map((c) => wrongCurrentPassword(ten, 'acme.localhost', c.cookie, '198.51.100.2')),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(422));
    expect(await attemptsFrom(ten, acmeTen, '198.51.100.2')).toBe(10);
  });
});

describe('an exhausted pool', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ config: testConfig({ database: { pool_size: 1, acquire_timeout_ms: 300 } }) });
  });
  afterAll(async () => {
    await app?.close();
  });

  it('answers 503 DB_BUSY with Retry-After once the acquisition timeout passes, and serves again when a connection frees', async () => {
    const { cookie } = await signInAs(app, app.operator, []);
    const held = await app.services.db.pool.connect();
    let res: Awaited<ReturnType<ReturnType<TestApp['http']>['get']>>;
    try {
      const started = Date.now();
      res = await app.http().get('/api/v1/auth/me').set('Cookie', cookie).timeout(5_000);
      expect(Date.now() - started).toBeLessThan(3_000);
    } finally {
      held.release();
    }
    expect(res.status).toBe(503);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body).toMatchObject({ code: 'DB_BUSY', status: 503 });
    expect((await app.http().get('/api/v1/auth/me').set('Cookie', cookie)).status).toBe(200);
  });
});

describe('subscriptions that build links (reset and invitation mails)', () => {
  let app: TestApp;
  let acme: TenantRef;
  beforeAll(async () => {
    // One connection: the delivery's transaction holds it while the link is built.
    app = await startTestApp({ role: 'all', config: testConfig({ database: { pool_size: 1 } }) });
    acme = await createCustomer(app, 'acme');
  });
  afterAll(async () => {
    await app?.close();
  });

  it('read the primary host through the transaction: a reset mail is delivered with a pool of one', async () => {
    const user = await addUser(app, acme);
    const res = await app
      .http('acme.localhost')
      .post('/api/v1/auth/password/forgot')
      .set('X-Forwarded-For', '198.51.100.3')
      .send({ email: user.email });
    expect(res.status).toBe(202);
    await deliverOutbox(app);
    const mailbox = app.services.mailer as MemoryMailbox;
    const mail = await waitFor(async () => mailbox.messages.find((m) => m.to === user.email), 'the reset mail', 5_000);
    expect(mail.text).toContain(`http://acme.localhost:${app.config.server.port}/auth/reset?token=`);
  });

  it('and an invitation mail too', async () => {
    const { cookie } = await signInAs(app, acme, ['*']);
    const res = await app
      .http('acme.localhost')
      .post('/api/v1/user/invitations')
      .set('Cookie', cookie)
      .send({ email: 'invited@acme.test' });
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
    await deliverOutbox(app);
    const mailbox = app.services.mailer as MemoryMailbox;
    const mail = await waitFor(
      async () => mailbox.messages.find((m) => m.to === 'invited@acme.test'),
      'the invitation mail',
      5_000,
    );
    expect(mail.text).toContain(`http://acme.localhost:${app.config.server.port}/auth/reset?token=`);
  });
});
