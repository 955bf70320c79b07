import { PgBoss, type Job, type JobResult } from 'pg-boss';
import type { JobWithMetadata } from 'pg-boss';
import type { Services } from '../services.ts';
import type { DeliveredEvent, SubscriptionDefinition } from '../entity/define.ts';
import { OutboxRelay, AUDIT_QUEUE, subscriptionQueue } from './relay.ts';
import { tenantById, servedTenants } from '../context/tenant-lookup.ts';
import { CompiledQuery, sql } from 'kysely';
import { prepared } from '../db/statements.ts';

export const DEAD_LETTER_QUEUE = 'tenantry-dead-letters';
export const jobQueue = (name: string): string => `job-${name}`;

const RETRY = { retryLimit: 5, retryDelay: 2, retryBackoff: true, retryDelayMax: 300 };

// The event id recorded in the effect's own transaction: a row back means this is the first delivery.
const FIRST_DELIVERY = prepared(
  'insert into processed_events (subscription, event_id) values ($1, $2) on conflict do nothing returning event_id',
);
const RECORD_AUDIT = prepared(`
insert into audit_events (event_id, name, actor_id, occurred_at, payload)
select e.event_id, e.name, e.actor_id, e.occurred_at, e.payload
  from jsonb_to_recordset($1::jsonb) as e(event_id uuid, name text, actor_id uuid, occurred_at timestamptz, payload jsonb)
on conflict do nothing`);

/** A subscription may shorten or lengthen its retries; the delay still doubles after each attempt. */
function retryOverrides(sub: SubscriptionDefinition): { retryLimit?: number; retryDelay?: number } {
  return {
    ...(sub.retryLimit !== undefined ? { retryLimit: sub.retryLimit } : {}),
    ...(sub.retryDelay !== undefined ? { retryDelay: sub.retryDelay } : {}),
  };
}

// Event workers wake on the queue's NOTIFY and keep fetching while batches come back full; the
// poll is only the fallback should the listener be down. Polling alone (fetch, then wait half a
// second) capped a subscription at a few events per second.
const DRAIN = { burstWhenBatchFull: true, pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 2 };

/**
 * The worker role: relays the outbox, runs subscriptions and the audit recorder, and runs the
 * modules' scheduled jobs, all on pg-boss. Any number of worker processes may run at once.
 */
export class Worker {
  readonly boss: PgBoss;
  readonly relay: OutboxRelay;
  private readonly services: Services;

  constructor(services: Services, options: { relayIntervalMs?: number } = {}) {
    this.services = services;
    this.boss = new PgBoss({ connectionString: services.db.url, max: 4, useListenNotify: true, schema: 'pgboss' });
    this.boss.on('error', (err: Error) => services.log.error({ err }, 'pg-boss error'));
    this.relay = new OutboxRelay(services.db, this.boss, services.registry, { intervalMs: options.relayIntervalMs });
  }

  async start(options: { schedule?: boolean } = {}): Promise<void> {
    const { registry, log } = this.services;
    await this.boss.start();
    await this.boss.createQueue(DEAD_LETTER_QUEUE);
    await this.boss.work<DeliveredEvent, unknown, { pollingIntervalSeconds: 1; includeMetadata: true }>(
      DEAD_LETTER_QUEUE,
      { pollingIntervalSeconds: 1, includeMetadata: true },
      async (jobs) => {
        for (const job of jobs) await this.recordDeadLetter(job);
      },
    );

    await this.createEventQueue(AUDIT_QUEUE, {});
    await this.boss.work<DeliveredEvent>(AUDIT_QUEUE, { ...DRAIN, batchSize: 50 }, async (jobs) => {
      await this.recordAudits(jobs.map((job) => job.data));
    });

    for (const sub of registry.subscriptions) {
      const queue = subscriptionQueue(sub.name);
      await this.createEventQueue(queue, retryOverrides(sub));
      // Settled job by job, so one failing event is retried alone, not with its batch.
      await this.boss.work<DeliveredEvent>(queue, { ...DRAIN, batchSize: 10, localConcurrency: 2, perJobResults: true }, async (jobs) => {
        const results: JobResult[] = [];
        for (const job of jobs) {
          try {
            await this.deliver(sub, job.data);
            results.push({ id: job.id, status: 'completed' });
          } catch (err) {
            results.push({ id: job.id, status: 'failed', output: { message: (err as Error).message } });
          }
        }
        return results;
      });
    }

    for (const job of registry.jobs) {
      const queue = jobQueue(job.name);
      await this.boss.createQueue(queue, { retryLimit: 2, retryDelay: 30 });
      if (options.schedule !== false) await this.boss.schedule(queue, job.cron);
      await this.boss.work(queue, { pollingIntervalSeconds: 2 }, async () => {
        await this.runJob(job.name);
      });
    }
    await this.relay.start();
    log.info({ subscriptions: registry.subscriptions.length, jobs: registry.jobs.length }, 'worker started');
  }

  /**
   * Event queues notify their workers on insert (the relay's insert commits the notification),
   * also when the queue already existed without the option.
   */
  private async createEventQueue(queue: string, options: ReturnType<typeof retryOverrides>): Promise<void> {
    await this.boss.createQueue(queue, { ...RETRY, ...options, deadLetter: DEAD_LETTER_QUEUE, notify: true });
    await this.boss.updateQueue(queue, { notify: true });
  }

  /** Runs a subscription in the event's tenant transaction, once per event id. */
  async deliver(sub: SubscriptionDefinition, event: DeliveredEvent): Promise<void> {
    const tenant = await tenantById(this.services.db, event.tenantId);
    if (!tenant) return;
    await this.services.transactions.run(
      tenant,
      async (ctx) => {
        const first = await ctx.db.executeQuery(CompiledQuery.raw(FIRST_DELIVERY, [sub.name, event.id]));
        if (first.rows.length === 0) return;
        await sub.handle(ctx, event, this.services);
      },
      { actorId: event.actorId },
    );
  }

  async recordAudit(event: DeliveredEvent): Promise<void> {
    await this.recordAudits([event]);
  }

  /** Records a batch of events: one transaction and one statement per tenant, not per event. */
  async recordAudits(events: DeliveredEvent[]): Promise<void> {
    const byTenant = new Map<string, DeliveredEvent[]>();
    for (const event of events) {
      const batch = byTenant.get(event.tenantId);
      if (batch) batch.push(event);
      else byTenant.set(event.tenantId, [event]);
    }
    for (const [tenantId, batch] of byTenant) {
      const tenant = await tenantById(this.services.db, tenantId);
      if (!tenant) continue;
      const rows = batch.map((e) => ({ event_id: e.id, name: e.name, actor_id: e.actorId, occurred_at: e.occurredAt, payload: e.payload }));
      await this.services.transactions.run(tenant, (ctx) => ctx.db.executeQuery(CompiledQuery.raw(RECORD_AUDIT, [JSON.stringify(rows)])));
    }
  }

  /** Keeps what an operator needs to see and replay: the queue that gave up, the event and its last error. */
  private async recordDeadLetter(job: JobWithMetadata<DeliveredEvent>): Promise<void> {
    const data = job.data ?? ({} as Partial<DeliveredEvent>);
    const output = job.sourceOutput as { message?: unknown } | null;
    const error = typeof output?.message === 'string' ? output.message : JSON.stringify(output ?? 'retries exhausted');
    const queue = job.sourceName ?? job.name;
    await this.services.db.kysely
      .insertInto('dead_letters')
      .values({
        queue,
        event_id: data.id ?? null,
        tenant_id: data.tenantId ?? null,
        name: data.name ?? null,
        error: `${error} (after ${(job.sourceRetryCount ?? 0) + 1} attempts)`,
        payload: sql`${JSON.stringify(data.payload ?? {})}::jsonb`,
      })
      .execute();
    this.services.log.error({ queue, event: data.name, eventId: data.id, error }, 'event delivery dead-lettered');
  }

  /** Runs a declared job now: per tenant in each served tenant's own transaction, or once. */
  async runJob(name: string): Promise<void> {
    const job = this.services.registry.jobs.find((j) => j.name === name);
    if (!job) throw new Error(`no job ${name}`);
    if (!job.perTenant) return job.run({ services: this.services });
    for (const tenant of await servedTenants(this.services.db)) {
      try {
        await this.services.transactions.run(tenant, (tx) => job.run({ tx, services: this.services }));
      } catch (err) {
        this.services.log.error({ err, job: name, tenant: tenant.slug }, 'job failed for tenant');
      }
    }
  }

  async stop(): Promise<void> {
    await this.relay.stop();
    await this.boss.stop({ graceful: true, timeout: 10_000 });
  }
}
