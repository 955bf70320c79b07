import { createHash } from 'node:crypto';
import type { Services } from '../services.ts';
import type { JobContext, JobDefinition, JobSummary } from '../entity/define.ts';
import type { TenantRef } from '../context/tenant.ts';
import { servedTenants } from '../context/tenant-lookup.ts';
import { withSpan } from '../observability/tracing.ts';

/** The queue a job's schedule sends to: it runs the job (or fans it out, per tenant). */
export const jobQueue = (name: string): string => `job-${name}`;
/** The queue of a per-tenant job's runs, one job per tenant and slot. */
export const tenantJobQueue = (name: string): string => `job-${name}/tenant`;

export const JOB_RETRY_DEFAULTS = { retryLimit: 2, retryDelay: 30 } as const;

/** The data of one per-tenant run, as queued. */
export interface TenantJobData {
  job: string;
  tenantId: string;
  slot: string;
}

/** What one run did: a summary, or the error it failed with. */
export interface JobOutcome {
  /** The tenant's slug, or null for a job that is not per tenant. */
  tenant: string | null;
  ok: boolean;
  summary?: JobSummary;
  error?: string;
}

export class UnknownJobError extends Error {
  override name = 'UnknownJobError';
}

/**
 * A run's singleton key: its job, tenant and slot. It names the run for people and queries (the
 * runs of a slot share it); it makes nothing unique, since a standard pg-boss queue keeps every job
 * whatever its singleton key (only a throttle or a queue policy uses it, and these queues have neither).
 */
export const runKey = (job: string, tenantId: string, slot: string): string => `${job}:${tenantId}:${slot}`;

/**
 * A run's job id, derived from its run key and the fan-out that queued it: a fan-out retried (its
 * tick retried after its worker died before settling it) queues each tenant's run once, since
 * pg-boss drops an insert whose id exists. Another fan-out of the same slot (another tick, an
 * operator's rerun) is another run, and queues every tenant again: the slot does not make a run
 * done (issue 51: a second run of a slot skipped every tenant the first had run).
 */
export function runId(key: string, fanOut: string): string {
  const h = createHash('sha256').update(`${key}:${fanOut}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** A schedule slot: the minute an instant falls in, as an ISO time (cron's resolution). */
export function slotOf(at: Date): string {
  return new Date(Math.floor(at.getTime() / 60_000) * 60_000).toISOString();
}

/**
 * Runs declared jobs. The worker calls it for each queued run; `npm run job` calls runOnce. A run
 * holds no transaction while its body runs: the job opens its own with ctx.transaction.
 */
export class JobRunner {
  private readonly services: Services;

  constructor(services: Services) {
    this.services = services;
  }

  find(name: string): JobDefinition {
    const job = this.services.jobs.find((j) => j.name === name);
    if (!job)
      throw new UnknownJobError(
        `no job ${name}; declared: ${this.services.jobs.map((j) => j.name).join(', ') || 'none'}`,
      );
    return job;
  }

  /** One run, for one tenant or none. Logs and rethrows a failure, so the caller's queue retries it. */
  async run(job: JobDefinition, tenant: TenantRef | null, slot: string, attempt = 1): Promise<JobSummary | void> {
    const { services } = this;
    const ctx: JobContext = {
      services,
      tenant,
      now: services.clock.now(),
      slot,
      transaction: (fn) => {
        if (!tenant)
          return Promise.reject(
            new Error(
              `job ${job.name} is not per tenant: open a transaction with services.transactions.run(tenant, fn)`,
            ),
          );
        // The job is who acts: history names it.
        return services.transactions.run(tenant, fn, { acting: { kind: 'job', name: job.name } });
      },
    };
    const started = performance.now();
    const observe = (ok: boolean) =>
      services.metrics?.observeJob(job.name, ok, (performance.now() - started) / 1000, new Date());
    try {
      const attributes = { 'tenantry.job': job.name, 'tenantry.job.slot': slot, 'tenantry.job.attempt': attempt };
      const summary = await withSpan(`job ${job.name}`, { attributes }, () => job.run(ctx));
      observe(true);
      services.log.info(
        { job: job.name, tenant: tenant?.slug ?? null, slot, summary: summary ?? null },
        'job run done',
      );
      return summary;
    } catch (err) {
      observe(false);
      services.log.error({ err, job: job.name, tenant: tenant?.slug ?? null, slot, attempt }, 'job run failed');
      throw err;
    }
  }

  /**
   * Runs a job once, here and now, with no queue and no retry: for each served tenant in turn (or
   * the one given), or once. One tenant's failure does not stop the others; each outcome is returned.
   */
  async runOnce(name: string, options: { tenant?: TenantRef; slot?: string } = {}): Promise<JobOutcome[]> {
    const job = this.find(name);
    const slot = options.slot ?? slotOf(this.services.clock.now());
    if (!job.perTenant) {
      if (options.tenant) throw new UnknownJobError(`job ${name} is not per tenant: it takes no tenant`);
      return [await this.outcome(job, null, slot)];
    }
    const tenants = options.tenant ? [options.tenant] : await servedTenants(this.services.db);
    const outcomes: JobOutcome[] = [];
    for (const tenant of tenants) outcomes.push(await this.outcome(job, tenant, slot));
    return outcomes;
  }

  private async outcome(job: JobDefinition, tenant: TenantRef | null, slot: string): Promise<JobOutcome> {
    try {
      const summary = await this.run(job, tenant, slot);
      return { tenant: tenant?.slug ?? null, ok: true, ...(summary ? { summary } : {}) };
    } catch (err) {
      return { tenant: tenant?.slug ?? null, ok: false, error: (err as Error).message };
    }
  }
}
