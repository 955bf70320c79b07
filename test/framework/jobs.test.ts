import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp, createCustomer, type TestApp } from '../helpers/app.ts';
import { tallyControl, tallyJob, testkitModule } from '../helpers/testkit-module.ts';
import { allModules } from '../../modules/index.ts';
import { defineModule, type JobContext } from '../../framework/entity/define.ts';
import { Worker, jobQueue, tenantJobQueue } from '../../framework/events/worker.ts';
import { runKey } from '../../framework/events/jobs.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

// A job that is not per tenant, failing on demand.
let globalRuns: { tenant: JobContext['tenant']; slot: string }[] = [];
let failGlobal = false;
const globalProbe = defineModule({
  name: 'jobprobe',
  jobs: [
    {
      name: 'jobprobe-global',
      cron: '15 2 * * *',
      perTenant: false,
      retryLimit: 1,
      retryDelay: 1,
      async run(ctx) {
        globalRuns.push({ tenant: ctx.tenant, slot: ctx.slot });
        if (failGlobal) throw new Error('jobprobe-global fails on purpose');
        return { ran: true };
      },
    },
  ],
});

let app: TestApp;
let worker: Worker;
let acme: TenantRef;
let globex: TenantRef;
let suspended: TenantRef;

beforeAll(async () => {
  app = await startTestApp({ modules: [...allModules, testkitModule, globalProbe] });
  acme = await createCustomer(app, 'jobs-acme');
  globex = await createCustomer(app, 'jobs-globex');
  suspended = await createCustomer(app, 'jobs-suspended');
  await app.services.db.pool.query(`update tenants set status = 'suspended' where id = $1`, [suspended.id]);
  // The worker role, with its schedules, as `--role worker` starts it.
  worker = new Worker(app.services);
  await worker.start();
});
afterAll(async () => {
  await worker?.stop();
  await app?.close();
});
beforeEach(() => {
  tallyControl.failFor.clear();
  tallyControl.attempts.length = 0;
  globalRuns = [];
  failGlobal = false;
});

const served = () => [app.operator.id, acme.id, globex.id].sort();
const pool = () => app.services.db.pool;

async function until<T>(probe: () => Promise<T | false | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The queued per-tenant runs of a slot, as pg-boss holds them. */
async function runsOf(slot: string) {
  const { rows } = await pool().query<{ singleton_key: string; state: string; retry_count: number; tenant_id: string }>(
    `select singleton_key, state, retry_count, data->>'tenantId' as tenant_id from pgboss.job where name = $1 and data->>'slot' = $2 order by singleton_key`,
    [tenantJobQueue(tallyJob.name), slot],
  );
  return rows;
}

const tallyWidgets = async (slot: string) =>
  (
    await pool().query<{ tenant_id: string }>(
      `select tenant_id from widgets where color = 'tally' and name = $1 order by tenant_id`,
      [`tally ${slot}`],
    )
  ).rows.map((r) => r.tenant_id);

describe('jobs', () => {
  it('are registered as pg-boss schedules by the worker, with their cron', async () => {
    const schedules = await worker.boss.getSchedules();
    const byName = Object.fromEntries(schedules.map((s) => [s.name, s.cron]));
    expect(byName[jobQueue('testkit-tally')]).toBe('0 3 * * *');
    expect(byName[jobQueue('jobprobe-global')]).toBe('15 2 * * *');
    for (const job of app.services.jobs) expect(byName[jobQueue(job.name)], job.name).toBe(job.cron);
  });

  it('fan a per-tenant job out as one pg-boss job per served tenant and slot, keyed job:tenant:slot', async () => {
    const slot = '2030-01-01T03:00:00.000Z';
    await worker.boss.send(jobQueue(tallyJob.name), { slot });
    const runs = await until(async () => {
      const found = await runsOf(slot);
      return found.length === 3 && found.every((r) => r.state === 'completed') && found;
    }, 'three completed runs');
    expect(runs.map((r) => r.tenant_id).sort()).toEqual(served());
    expect(runs.map((r) => r.singleton_key).sort()).toEqual(
      served()
        .map((id) => runKey(tallyJob.name, id, slot))
        .sort(),
    );
    expect(await tallyWidgets(slot)).toEqual(served());
  });

  it("queue a tick's runs once however often the tick is retried: a retried fan-out is the same run", async () => {
    const slot = '2030-01-02T03:00:00.000Z';
    const tick = (await worker.boss.send(jobQueue(tallyJob.name), { slot }))!;
    await until(
      async () => (await runsOf(slot)).length === 3 && (await runsOf(slot)).every((r) => r.state === 'completed'),
      'the runs',
    );
    // The tick's retries fan out again under its id (its worker died before settling it): queued
    // and completed runs alike are not queued again.
    expect(await worker.fanOut(tallyJob, slot, tick)).toEqual([]);
    expect(await worker.fanOut(tallyJob, slot, tick)).toEqual([]);
    expect(await runsOf(slot)).toHaveLength(3);
    expect(tallyControl.attempts.filter((a) => a.slot === slot)).toHaveLength(3);
  });

  it('run every served tenant again on another run of a slot already run, whatever ran before (issue 51)', async () => {
    const slot = '2030-01-08T03:00:00.000Z';
    await worker.boss.send(jobQueue(tallyJob.name), { slot });
    await until(
      async () => (await runsOf(slot)).length === 3 && (await runsOf(slot)).every((r) => r.state === 'completed'),
      'the first run',
    );
    // A second tick of the slot, then a fan-out asked for by hand: each is a run of its own.
    await worker.boss.send(jobQueue(tallyJob.name), { slot });
    await until(
      async () => (await runsOf(slot)).length === 6 && (await runsOf(slot)).every((r) => r.state === 'completed'),
      'the second run',
    );
    const queued = await worker.fanOut(tallyJob, slot);
    expect(queued).toHaveLength(3);
    await until(
      async () => (await runsOf(slot)).length === 9 && (await runsOf(slot)).every((r) => r.state === 'completed'),
      'the third run',
    );
    const attempts = tallyControl.attempts.filter((a) => a.slot === slot).map((a) => a.tenantId);
    expect(attempts.sort()).toEqual([...served(), ...served(), ...served()].sort());
  });

  it('run the job body with no transaction open: it opens its own, as many as it needs', async () => {
    const slot = '2030-01-03T03:00:00.000Z';
    const outcomes = await worker.jobs.runOnce(tallyJob.name, { slot, tenant: acme });
    expect(outcomes).toEqual([
      { tenant: 'jobs-acme', ok: true, summary: { widgetsBefore: expect.any(Number), created: true } },
    ]);
    expect(tallyControl.attempts).toEqual([{ tenantId: acme.id, slot, openTransactions: 0 }]);
    // Each transaction it opened is scoped to its tenant by row-level security alone.
    const { rows } = await pool().query(`select tenant_id from widgets where name = $1`, [`tally ${slot}`]);
    expect(rows).toEqual([{ tenant_id: acme.id }]);
  });

  it("retry one tenant's failing run alone and dead-letter it after its retries, while the others commit", async () => {
    const slot = '2030-01-04T03:00:00.000Z';
    tallyControl.failFor.add(acme.id);
    await worker.boss.send(jobQueue(tallyJob.name), { slot });
    const letter = await until(async () => {
      const { rows } = await pool().query(
        `select queue, event_id, tenant_id, name, error, payload from dead_letters where tenant_id = $1 and payload->>'slot' = $2`,
        [acme.id, slot],
      );
      return rows[0];
    }, 'the dead letter');
    expect(letter).toEqual({
      queue: tenantJobQueue(tallyJob.name),
      event_id: null,
      tenant_id: acme.id,
      name: tallyJob.name,
      error: `testkit-tally refuses tenant jobs-acme (after 2 attempts)`,
      payload: { slot },
    });
    const attempts = tallyControl.attempts.filter((a) => a.slot === slot);
    expect(attempts.filter((a) => a.tenantId === acme.id)).toHaveLength(2);
    expect(
      attempts
        .filter((a) => a.tenantId !== acme.id)
        .map((a) => a.tenantId)
        .sort(),
    ).toEqual([app.operator.id, globex.id].sort());
    expect(await tallyWidgets(slot)).toEqual([app.operator.id, globex.id].sort());
    const runs = await runsOf(slot);
    expect(runs.find((r) => r.tenant_id === acme.id)).toMatchObject({ state: 'failed', retry_count: 1 });
  });

  it('skip suspended tenants', async () => {
    const slot = '2030-01-05T03:00:00.000Z';
    await worker.fanOut(tallyJob, slot);
    expect((await runsOf(slot)).map((r) => r.tenant_id)).not.toContain(suspended.id);
  });

  it('run a job that is not per tenant once per slot, with no tenant, and dead-letter it after its retries', async () => {
    await worker.boss.send(jobQueue('jobprobe-global'), { job: 'jobprobe-global', slot: '2030-01-06T02:15:00.000Z' });
    await until(async () => globalRuns.length === 1, 'the global run');
    expect(globalRuns).toEqual([{ tenant: null, slot: '2030-01-06T02:15:00.000Z' }]);

    failGlobal = true;
    await worker.boss.send(jobQueue('jobprobe-global'), { job: 'jobprobe-global', slot: '2030-01-07T02:15:00.000Z' });
    const letter = await until(async () => {
      const { rows } = await pool().query(`select queue, tenant_id, name, error from dead_letters where queue = $1`, [
        jobQueue('jobprobe-global'),
      ]);
      return rows[0];
    }, 'the dead letter');
    expect(letter).toEqual({
      queue: jobQueue('jobprobe-global'),
      tenant_id: null,
      name: 'jobprobe-global',
      error: 'jobprobe-global fails on purpose (after 2 attempts)',
    });
    expect(globalRuns.filter((r) => r.slot === '2030-01-07T02:15:00.000Z')).toHaveLength(2);
  });

  it('refuse a transaction to a job that is not per tenant, pointing at services.transactions', async () => {
    const job = {
      name: 'x',
      cron: '* * * * *',
      perTenant: false,
      run: async (ctx: JobContext) => void (await ctx.transaction(async () => 1)),
    };
    await expect(worker.jobs.run(job, null, 'slot')).rejects.toThrow(/not per tenant.*services\.transactions/);
  });

  it('refuse to run an unknown job', async () => {
    await expect(worker.jobs.runOnce('no-such-job')).rejects.toThrow(/no job no-such-job/);
  });

  it("hand each run the clock's time", async () => {
    const seen: Date[] = [];
    const job = {
      name: 'y',
      cron: '* * * * *',
      perTenant: true,
      run: async (ctx: JobContext) => void seen.push(ctx.now, await ctx.transaction(async (tx) => tx.now)),
    };
    await worker.jobs.run(job, acme, 'slot');
    expect(seen).toHaveLength(2);
    expect(Math.abs(seen[0]!.getTime() - Date.now())).toBeLessThan(5000);
    expect(seen[1]!.getTime()).toBeGreaterThanOrEqual(seen[0]!.getTime());
  });
});
