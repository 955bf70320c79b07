import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { startTestApp, createCustomer, type TestApp } from '../helpers/app.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { allModules } from '../../modules/index.ts';
import { defineModule, type JobContext } from '../../framework/entity/define.ts';
import { Worker, jobQueue } from '../../framework/events/worker.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

interface Visit {
  job: string;
  tenant: string | null;
  scope: string | null;
  role: string | null;
  xact: string | null;
}
const visits: Visit[] = [];
let failFor: string | undefined;

async function visit(job: string, ctx: JobContext): Promise<void> {
  if (!ctx.tx) {
    visits.push({ job, tenant: null, scope: null, role: null, xact: null });
    return;
  }
  const { rows } = await ctx.tx.db.executeQuery<{ scope: string; role: string; xact: string }>(
    CompiledQuery.raw('select app_tenant_id()::text as scope, current_user as role, pg_current_xact_id()::text as xact'),
  );
  visits.push({ job, tenant: ctx.tx.tenant.id, ...rows[0]! });
  // An effect in the tenant's own table, scoped by row-level security alone.
  await ctx.tx.db.executeQuery(CompiledQuery.raw(`insert into widgets (name, size, color) values ($1, 1, 'job')`, [`${job}-${visits.length}`]));
  if (ctx.tx.tenant.id === failFor) throw new Error('this tenant fails');
}

const jobProbe = defineModule({
  name: 'jobprobe',
  jobs: [
    { name: 'jobprobe-per-tenant', cron: '*/5 * * * *', perTenant: true, run: (ctx) => visit('jobprobe-per-tenant', ctx) },
    { name: 'jobprobe-global', cron: '15 2 * * *', perTenant: false, run: (ctx) => visit('jobprobe-global', ctx) },
  ],
});

let app: TestApp;
let worker: Worker;
let acme: TenantRef;
let globex: TenantRef;
let suspended: TenantRef;

beforeAll(async () => {
  app = await startTestApp({ modules: [...allModules, testkitModule, jobProbe] });
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

const per = () => visits.filter((v) => v.job === 'jobprobe-per-tenant');

describe('jobs', () => {
  it('are registered as pg-boss schedules by the worker, with their cron', async () => {
    const schedules = await worker.boss.getSchedules();
    const byName = Object.fromEntries(schedules.map((s) => [s.name, s.cron]));
    expect(byName[jobQueue('jobprobe-per-tenant')]).toBe('*/5 * * * *');
    expect(byName[jobQueue('jobprobe-global')]).toBe('15 2 * * *');
    for (const job of app.services.registry.jobs) expect(byName[jobQueue(job.name)], job.name).toBe(job.cron);
  });

  it('run a per-tenant job once in each served tenant, each in its own tenant transaction', async () => {
    visits.length = 0;
    await worker.runJob('jobprobe-per-tenant');
    const tenants = per().map((v) => v.tenant).sort();
    expect(tenants).toEqual([app.operator.id, acme.id, globex.id].sort());
    for (const v of per()) {
      expect(v.scope).toBe(v.tenant);
      expect(v.role).toBe('tenantry_app');
    }
    expect(new Set(per().map((v) => v.xact)).size).toBe(3);
    const { rows } = await app.services.db.pool.query(`select tenant_id from widgets where color = 'job' order by tenant_id`);
    expect(rows.map((r) => r.tenant_id).sort()).toEqual(tenants);
  });

  it('keep going when one tenant fails: its transaction alone is rolled back', async () => {
    visits.length = 0;
    await app.services.db.pool.query(`delete from widgets where color = 'job'`);
    failFor = acme.id;
    try {
      await worker.runJob('jobprobe-per-tenant');
    } finally {
      failFor = undefined;
    }
    expect(per()).toHaveLength(3);
    const { rows } = await app.services.db.pool.query(`select tenant_id from widgets where color = 'job'`);
    expect(rows.map((r) => r.tenant_id).sort()).toEqual([app.operator.id, globex.id].sort());
  });

  it('run a job that is not per tenant once, with no tenant transaction', async () => {
    visits.length = 0;
    await worker.runJob('jobprobe-global');
    expect(visits).toEqual([{ job: 'jobprobe-global', tenant: null, scope: null, role: null, xact: null }]);
  });

  it('run when pg-boss delivers the scheduled job', async () => {
    visits.length = 0;
    await worker.boss.send(jobQueue('jobprobe-per-tenant'), {});
    const deadline = Date.now() + 15_000;
    while (per().length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(per().map((v) => v.tenant).sort()).toEqual([app.operator.id, acme.id, globex.id].sort());
  });

  it('refuse to run an unknown job', async () => {
    await expect(worker.runJob('no-such-job')).rejects.toThrow(/no job no-such-job/);
  });
});
