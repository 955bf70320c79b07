import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { HOUR_MS, SettableClock } from '../../../framework/clock.ts';
import { JobRunner } from '../../../framework/events/jobs.ts';
import { npmRun, type Finished } from '../../e2e/processes.ts';

const clock = new SettableClock();
let app: TestApp;
/** A second process on the same database: another worker, with its own pool. */
let second: TestApp;
let acme: TenantRef;
let manager: SignedIn;
const host = 'sweep-acme.localhost';
const BASE = '/api/v1/task/tasks';

beforeAll(async () => {
  app = await startTestApp({ clock, role: 'all', startWorker: false });
  second = await startTestApp({ clock, role: 'all', startWorker: false, databaseUrl: app.databaseUrl });
  acme = await createCustomer(app, 'sweep-acme');
  manager = await signInAs(app, acme, ['task:read', 'task:update']);
});
afterAll(async () => {
  await second?.close();
  await app?.close();
});

const inHours = (hours: number) => new Date(clock.now().getTime() + hours * HOUR_MS).toISOString();
const create = async (deadline: string) => {
  const res = await app
    .http(host)
    .post(BASE)
    .set('Cookie', manager.cookie)
    .send({ title: 'Due', priority: 'medium', deadline });
  expect(res.status).toBe(201);
  return res.body.id as string;
};
const breachEvents = async (ids: string[]) =>
  (
    await app.services.db.pool.query(
      `select payload->>'id' as id from outbox where name = 'task.sla_breached' and payload->>'id' = any($1)`,
      [ids],
    )
  ).rows.map((r) => r.id);
const breached = async (ids: string[]) =>
  (
    await app.services.db.pool.query(`select id from tasks where id = any($1) and sla_breached order by id`, [ids])
  ).rows.map((r) => r.id);

describe('the SLA sweep (task-sla-sweep, every minute, per tenant)', () => {
  it('is declared every minute and per tenant', () => {
    const job = app.services.jobs.find((j) => j.name === 'task-sla-sweep');
    expect(job).toMatchObject({ cron: '* * * * *', perTenant: true });
  });

  it('marks only the tasks whose deadline passed by the clock’s time, not resolved or closed ones, and each once', async () => {
    const soon = await create(inHours(1));
    const later = await create(inHours(3));
    const resolved = await create(inHours(1));
    expect(
      (
        await app
          .http(host)
          .post(`${BASE}/${resolved}/resolve`)
          .set('Cookie', manager.cookie)
          .send({ resolution: 'done' })
      ).status,
    ).toBe(200);
    const ids = [soon, later, resolved];

    const beforeAny = await app.worker!.jobs.runOnce('task-sla-sweep', { tenant: acme });
    expect(beforeAny[0]).toMatchObject({ ok: true, summary: { marked: 0 } });
    expect(await breached(ids)).toEqual([]);

    clock.advance(2 * HOUR_MS);
    try {
      const run = await app.worker!.jobs.runOnce('task-sla-sweep', { tenant: acme });
      expect(run[0]).toMatchObject({ ok: true, summary: { marked: 1 } });
      expect(await breached(ids)).toEqual([soon]);
      expect(await breachEvents(ids)).toEqual([soon]);
      const task = await app.http(host).get(`${BASE}/${soon}`).set('Cookie', manager.cookie);
      expect(task.body.slaBreached).toBe(true);

      await app.worker!.jobs.runOnce('task-sla-sweep', { tenant: acme });
      expect(await breachEvents(ids)).toEqual([soon]);
    } finally {
      clock.advance(-2 * HOUR_MS);
    }
  });

  it('publishes task.sla_breached exactly once per task under two concurrent sweeps from two workers', async () => {
    const ids = await Promise.all([1, 2, 3, 4, 5].map(() => create(inHours(1))));
    clock.advance(2 * HOUR_MS);
    // A third transaction holds the rows, so both sweeps are waiting on them at once when it lets go.
    const blocker = await app.services.db.pool.connect();
    try {
      await blocker.query('begin');
      await blocker.query('select id from tasks where id = any($1) for update', [ids]);
      const runs = [new JobRunner(app.services), new JobRunner(second.services)].map((runner) =>
        runner.runOnce('task-sla-sweep', { tenant: acme }),
      );
      const waiting = async () =>
        Number(
          (
            await app.services.db.pool.query(
              `select count(*) as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%update "tasks" set "sla_breached"%'`,
            )
          ).rows[0].n,
        );
      for (let i = 0; (await waiting()) < 2; i++) {
        if (i > 200) throw new Error('the two sweeps never waited on the rows together');
        await new Promise((r) => setTimeout(r, 25));
      }
      await blocker.query('commit');
      const outcomes = (await Promise.all(runs)).flat();
      expect(outcomes.every((o) => o.ok)).toBe(true);
      expect(outcomes.map((o) => (o.summary as { marked: number }).marked).reduce((a, b) => a + b, 0)).toBe(5);
      expect((await breachEvents(ids)).sort()).toEqual([...ids].sort());
      expect(await breached(ids)).toEqual([...ids].sort());
    } finally {
      blocker.release();
      clock.advance(-2 * HOUR_MS);
    }
  });

  it('npm run job -- task-sla-sweep --at <time> marks breaches as of that time', async () => {
    const id = await create(inHours(5));
    const early = await npmRunJob(['task-sla-sweep', '--tenant', 'sweep-acme', '--at', inHours(4)]);
    expect(early.code, early.stderr).toBe(0);
    expect(await breached([id])).toEqual([]);
    const at = inHours(6);
    const run = await npmRunJob(['task-sla-sweep', '--tenant', 'sweep-acme', '--at', at]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('sweep-acme: ok {"marked":1');
    expect(await breached([id])).toEqual([id]);
    expect(await breachEvents([id])).toEqual([id]);
  }, 120_000);
});

const npmRunJob = (args: string[], timeoutMs = 60_000): Promise<Finished> =>
  npmRun(
    'job',
    args,
    { TENANTRY_DATABASE_URL: app.databaseUrl, TENANTRY_SERVER_PUBLIC_HOST: 'operator.localhost' },
    timeoutMs,
  );
