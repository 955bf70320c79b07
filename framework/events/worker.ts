import { createHash, randomUUID } from 'node:crypto';
import { PgBoss, type JobResult } from 'pg-boss';
import type { JobWithMetadata } from 'pg-boss';
import type { Services } from '../services.ts';
import type {
  DeliveredEvent,
  JobDefinition,
  QueueDefinition,
  SubscriptionDefinition,
  SubscriptionJobs,
} from '../entity/define.ts';
import { OutboxRelay, SUBSCRIPTION_QUEUE_PREFIX, subscriptionQueue, type QueuedEvent } from './relay.ts';
import { FairQueueWorker, fairGroup } from './fair-queue.ts';
import { withRequestId } from '../observability/request-id.ts';
import { contextOf, withSpan } from '../observability/tracing.ts';
import { auditStatements } from './audit.ts';
import { tenantById, servedTenants, servedTenantsByIds } from '../context/tenant-lookup.ts';
import { CompiledQuery, sql } from 'kysely';
import { prepared } from '../db/statements.ts';
import {
  JOB_RETRY_DEFAULTS,
  JobRunner,
  jobQueue,
  runId,
  runKey,
  slotOf,
  tenantJobQueue,
  type TenantJobData,
} from './jobs.ts';

export { jobQueue, tenantJobQueue };

export const DEAD_LETTER_QUEUE = 'tenantry-dead-letters';
/** A UUID-shaped id derived from a key: the same key, the same job id. */
function stableJobId(key: string): string {
  const hex = createHash('sha256').update(key).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${((parseInt(hex.slice(16, 18), 16) & 0x3f) | 0x80).toString(16)}${hex.slice(18, 20)}-${hex.slice(20, 32)}`;
}

/** The pg-boss queue of a module's QueueDefinition. */
export const moduleQueue = (name: string): string => `queue-${name}`;
/**
 * Where the relay used to queue one job per event for the audit recorder, before it recorded the
 * audit trail itself. A worker still drains jobs left there by an older version, then it stays empty.
 */
export const LEGACY_AUDIT_QUEUE = 'tenantry-audit';

/** What a dead-letter job carries: an event delivery's data, or a job run's. */
type DeadLetterData = Partial<DeliveredEvent> & Partial<TenantJobData>;
/** A schedule tick: the job's name; a slot too when sent by hand (tests, replays), else the minute it was sent in. */
type TickData = { job?: string; slot?: string };

/** Per-tenant job runs a worker fetches at once (each still settled, retried and dead-lettered on its own). */
export const TENANT_RUN_BATCH = 25;
/**
 * A fan-out's runs a worker works at once, per job. One: a fan-out is background work, and at
 * 10,000 tenants two at a time took more of a small machine's CPU than a tenant's requests could
 * spare (docs/performance.md, "Ten thousand tenants"); more workers run more.
 */
export const TENANT_RUN_CONCURRENCY = 1;

const RETRY = { retryLimit: 5, retryDelay: 2, retryBackoff: true, retryDelayMax: 300 };

/** How often an idle module-queue worker looks for jobs; a settled job wakes it at once. */
const MODULE_QUEUE_POLL_MS = 500;

// The event id recorded in the effect's own transaction: a row back means this is the first delivery.
const FIRST_DELIVERY = prepared(
  'insert into processed_events (subscription, event_id) values ($1, $2) on conflict do nothing returning event_id',
);

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
 * The worker role: relays the outbox (recording the audit trail as it goes), and runs the
 * subscriptions and the modules' scheduled jobs on pg-boss. Any number of worker processes may
 * run at once.
 */
export class Worker {
  readonly boss: PgBoss;
  readonly relay: OutboxRelay;
  readonly jobs: JobRunner;
  private readonly services: Services;
  private readonly moduleQueueWorkers: FairQueueWorker[] = [];

  constructor(services: Services, options: { relayIntervalMs?: number } = {}) {
    this.services = services;
    this.jobs = new JobRunner(services);
    // How soon a delivery past its expiry (its worker killed mid-delivery) is failed and retried:
    // pg-boss expires jobs in its queue monitor pass, which runs at the longer of the supervise and
    // monitor intervals, and a queue's monitor time is shared by every worker, so both are set.
    this.boss = new PgBoss({
      // Directly to PostgreSQL (database.direct_url): pg-boss LISTENs, and holds sessions of its own.
      connectionString: services.db.directUrl,
      max: 4,
      useListenNotify: true,
      schema: 'pgboss',
      superviseIntervalSeconds: services.config.worker.supervise_interval_seconds,
      monitorIntervalSeconds: services.config.worker.supervise_interval_seconds,
    });
    this.boss.on('error', (err: Error) => services.log.error({ err }, 'pg-boss error'));
    this.relay = new OutboxRelay(services.db, this.boss, services.registry, {
      intervalMs: options.relayIntervalMs,
      metrics: services.metrics,
      replayMinutes: services.config.live.replay_minutes,
      liveEvents: services.live.events,
      commitWaitMs: services.config.worker.relay_commit_wait_ms,
    });
  }

  async start(options: { schedule?: boolean } = {}): Promise<void> {
    const { registry, log } = this.services;
    await this.boss.start();
    await this.boss.createQueue(DEAD_LETTER_QUEUE);
    await this.boss.work<DeadLetterData, unknown, { pollingIntervalSeconds: 1; includeMetadata: true }>(
      DEAD_LETTER_QUEUE,
      { pollingIntervalSeconds: 1, includeMetadata: true },
      async (jobs) => {
        for (const job of jobs) await this.recordDeadLetter(job);
      },
    );

    if (await this.boss.getQueue(LEGACY_AUDIT_QUEUE)) {
      await this.boss.work<DeliveredEvent>(
        LEGACY_AUDIT_QUEUE,
        { pollingIntervalSeconds: 30, batchSize: 100 },
        async (jobs) => {
          await this.recordAudits(jobs.map((job) => job.data));
        },
      );
    }

    for (const sub of registry.subscriptions) {
      const queue = subscriptionQueue(sub.name);
      await this.createEventQueue(queue, retryOverrides(sub));
      // Settled job by job, so one failing event is retried alone, not with its batch.
      await this.boss.work<QueuedEvent>(
        queue,
        { ...DRAIN, batchSize: 10, localConcurrency: 2, perJobResults: true },
        async (jobs) => {
          const results: JobResult[] = [];
          for (const job of jobs) {
            try {
              await this.tracedDelivery(sub, job.data);
              results.push({ id: job.id, status: 'completed' });
            } catch (err) {
              this.services.metrics?.deliveryFailures.inc({ subscription: sub.name });
              log.warn(
                {
                  err,
                  subscription: sub.name,
                  event: job.data.name,
                  eventId: job.data.id,
                  requestId: job.data.requestId ?? null,
                  attempt: job.retryCount + 1,
                },
                'event delivery failed',
              );
              results.push({ id: job.id, status: 'failed', output: { message: (err as Error).message } });
            }
          }
          return results;
        },
      );
    }

    for (const queue of registry.queues) await this.startModuleQueue(queue);
    for (const job of this.services.jobs) await this.startJob(job, options.schedule !== false);
    // The queues' depth and failures, read through pg-boss at scrape time (metrics on).
    this.services.metrics?.watchQueues(async () => await this.boss.getQueues());
    await this.relay.start();
    log.info({ subscriptions: registry.subscriptions.length, jobs: this.services.jobs.length }, 'worker started');
  }

  /**
   * Event queues notify their workers on insert (the relay's insert commits the notification),
   * also when the queue already existed without the option.
   */
  private async createEventQueue(queue: string, options: ReturnType<typeof retryOverrides>): Promise<void> {
    const expireInSeconds = this.services.config.worker.delivery_expire_seconds;
    await this.boss.createQueue(queue, {
      ...RETRY,
      ...options,
      expireInSeconds,
      deadLetter: DEAD_LETTER_QUEUE,
      notify: true,
    });
    await this.boss.updateQueue(queue, { notify: true, expireInSeconds });
  }

  /**
   * One delivery from a subscription's queue: with the event's request id in scope (so what the
   * subscription publishes records it too) and, tracing on, in a span under the span that wrote
   * the event. A successful delivery is logged with the request that caused the event.
   */
  private async tracedDelivery(sub: SubscriptionDefinition, event: QueuedEvent): Promise<void> {
    const requestId = event.requestId ?? null;
    const parent = contextOf(event.traceparent);
    await withRequestId(requestId, () =>
      withSpan(
        `deliver ${sub.name}`,
        {
          ...(parent ? { parent } : {}),
          attributes: {
            'tenantry.subscription': sub.name,
            'tenantry.event.name': event.name,
            'tenantry.event.id': event.id,
          },
        },
        () => this.deliver(sub, event),
      ),
    );
    this.services.log.info(
      { subscription: sub.name, event: event.name, eventId: event.id, requestId },
      'event delivered',
    );
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
        const { jobs, queued } = this.jobsFor(sub, event);
        await sub.handle(ctx, event, this.services, jobs);
        // Queued before the delivery commits, on pg-boss's own connections (the tenant's role may
        // not write pg-boss's tables, and no second connection of the app's pool is taken): a
        // delivery that then fails to commit is retried and queues the same ids again, which
        // pg-boss ignores, so every job is queued at least once and never twice.
        for (const [queue, list] of queued) await this.boss.insert(moduleQueue(queue), list);
      },
      { actorId: event.actorId, acting: { kind: 'subscription', name: sub.name } },
    );
  }

  /** Collects what a subscription queues; deliver() inserts it before the delivery commits. */
  private jobsFor(
    sub: SubscriptionDefinition,
    event: DeliveredEvent,
  ): { jobs: SubscriptionJobs; queued: Map<string, { id: string; data: object; group: { id: string } }[]> } {
    const queued = new Map<string, { id: string; data: object; group: { id: string } }[]>();
    return {
      queued,
      jobs: {
        send: async (queue, data, options = {}) => {
          const list = queued.get(queue) ?? [];
          // The same event queues the same job ids on every retry of the delivery: pg-boss keeps the first.
          const id = stableJobId(`${sub.name}\u0000${event.id}\u0000${queue}\u0000${options.group ?? list.length}`);
          // Every job's group names its tenant (fair-queue.ts): the worker shares slots out by it.
          list.push({ id, data, group: { id: fairGroup(event.tenantId, options.group ?? id) } });
          queued.set(queue, list);
        },
      },
    };
  }

  /**
   * A module's queue: its retries from the configuration, dead letters to the shared queue, and a
   * worker fair across tenants (fair-queue.ts): at most `concurrency` jobs per process,
   * `tenantConcurrency` of one tenant and `groupConcurrency` of one group, a free slot going first
   * to a tenant with nothing running. Counted in the process, so the caps hold however fast the
   * workers fetch (pg-boss's database-tracked groupConcurrency let a third job of a group start
   * when several fetched at once).
   */
  private async startModuleQueue(queue: QueueDefinition): Promise<void> {
    const name = moduleQueue(queue.name);
    const retry = { ...queue.retry(this.services.config), retryBackoff: true, deadLetter: DEAD_LETTER_QUEUE };
    await this.boss.createQueue(name, retry);
    await this.boss.updateQueue(name, retry);
    const worker = new FairQueueWorker(this.boss, {
      queue: name,
      concurrency: queue.concurrency,
      groupConcurrency: queue.groupConcurrency,
      tenantConcurrency: queue.tenantConcurrency,
      pollMs: MODULE_QUEUE_POLL_MS,
      work: (job) =>
        queue.work(job.data, this.services, { number: job.retryCount + 1, last: job.retryCount >= job.retryLimit }),
      onError: (err) => this.services.log.error({ err, queue: name }, 'module queue worker failed'),
    });
    this.moduleQueueWorkers.push(worker);
    worker.start();
  }

  async recordAudit(event: DeliveredEvent): Promise<void> {
    await this.recordAudits([event]);
  }

  /**
   * Records events in the audit trail in a transaction of their own, with the statements the
   * relay runs in its claim's transaction (for events that reached a queue, not the relay).
   */
  async recordAudits(events: DeliveredEvent[]): Promise<void> {
    const client = await this.services.db.pool.connect();
    try {
      await client.query('begin');
      for (const statement of auditStatements(events)) await client.query(statement);
      await client.query('commit');
    } catch (err) {
      await client.query('rollback').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }

  /**
   * A job's schedule ticks on its queue. A tick of a job that is not per tenant is the run itself;
   * a per-tenant job's tick fans out into one queued run per served tenant, each with its own
   * retries and dead letter, so one tenant's failure is retried alone. Failed runs are retried
   * with a doubling delay, then dead-lettered like event deliveries.
   */
  private async startJob(job: JobDefinition, schedule: boolean): Promise<void> {
    const retry = {
      retryLimit: job.retryLimit ?? JOB_RETRY_DEFAULTS.retryLimit,
      retryDelay: job.retryDelay ?? JOB_RETRY_DEFAULTS.retryDelay,
      retryBackoff: true,
      retryDelayMax: 3600,
      deadLetter: DEAD_LETTER_QUEUE,
    };
    const queue = jobQueue(job.name);
    await this.boss.createQueue(queue, retry);
    await this.boss.updateQueue(queue, retry);
    if (schedule) await this.boss.schedule(queue, job.cron, { job: job.name } satisfies TickData);
    await this.boss.work<TickData, unknown, { pollingIntervalSeconds: 2; includeMetadata: true }>(
      queue,
      { pollingIntervalSeconds: 2, includeMetadata: true },
      async ([tick]) => {
        // The slot is the minute the schedule fired in, kept by every retry of the tick.
        const slot = tick!.data?.slot ?? slotOf(tick!.createdOn);
        // The tick's id names its fan-out, so a retry of the tick queues nothing twice, and another
        // tick of the same slot is a run of its own.
        if (job.perTenant) await this.fanOut(job, slot, tick!.id);
        else await this.jobs.run(job, null, slot, tick!.retryCount + 1);
      },
    );
    if (!job.perTenant) return;
    const runs = tenantJobQueue(job.name);
    await this.boss.createQueue(runs, retry);
    await this.boss.updateQueue(runs, retry);
    // The runs are fetched a batch at a time, and fetched again at once while batches come back
    // full: fetching one run per poll capped a fan-out at about two tenants a second (10,000
    // tenants in an hour and a half; docs/performance.md, the tenants bench). Each run still
    // settles on its own (perJobResults), so a tenant's failure is retried and dead-lettered alone.
    await this.boss.work<
      TenantJobData,
      unknown,
      {
        pollingIntervalSeconds: 1;
        includeMetadata: true;
        localConcurrency: number;
        batchSize: number;
        burstWhenBatchFull: true;
        perJobResults: true;
      }
    >(
      runs,
      {
        pollingIntervalSeconds: 1,
        includeMetadata: true,
        localConcurrency: TENANT_RUN_CONCURRENCY,
        batchSize: TENANT_RUN_BATCH,
        burstWhenBatchFull: true,
        perJobResults: true,
      },
      async (batch) => {
        const results: JobResult[] = [];
        // A tenant suspended since the fan-out is no longer served: nothing to do. One query for the batch.
        const served = await servedTenantsByIds(
          this.services.db,
          batch.map((run) => run.data.tenantId),
        );
        for (const run of batch) {
          const { tenantId, slot } = run.data;
          try {
            const tenant = served.get(tenantId);
            if (tenant) await this.jobs.run(job, tenant, slot, run.retryCount + 1);
            results.push({ id: run.id, status: 'completed' });
          } catch (err) {
            // The run's failure, as a thrown handler would have left it (the dead letter reads its message).
            results.push({ id: run.id, status: 'failed', output: { message: (err as Error).message } });
          }
        }
        return results;
      },
    );
  }

  /**
   * Queues one run per served tenant for the slot, and returns the ids it queued. `fanOut` names
   * this fan-out (a tick's id; a fresh one by default): asked again under the same name it queues
   * no run twice, whether the first is queued, running or done. Under another it queues them all.
   */
  async fanOut(job: JobDefinition, slot: string, fanOut: string = randomUUID()): Promise<string[]> {
    const tenants = await servedTenants(this.services.db);
    if (tenants.length === 0) return [];
    const runs = tenants.map((tenant) => {
      const singletonKey = runKey(job.name, tenant.id, slot);
      return {
        id: runId(singletonKey, fanOut),
        singletonKey,
        data: { job: job.name, tenantId: tenant.id, slot } satisfies TenantJobData,
      };
    });
    return (await this.boss.insert(tenantJobQueue(job.name), runs, { returnId: true })) ?? [];
  }

  /** Keeps what an operator needs to see and replay: the queue that gave up, the event or job run and its last error. */
  private async recordDeadLetter(job: JobWithMetadata<DeadLetterData>): Promise<void> {
    const data = job.data ?? ({} as DeadLetterData);
    const output = job.sourceOutput as { message?: unknown } | null;
    const error = typeof output?.message === 'string' ? output.message : JSON.stringify(output ?? 'retries exhausted');
    const queue = job.sourceName ?? job.name;
    await this.services.db.kysely
      .insertInto('dead_letters')
      .values({
        queue,
        event_id: data.id ?? null,
        tenant_id: data.tenantId ?? null,
        name: data.name ?? data.job ?? null,
        error: `${error} (after ${(job.sourceRetryCount ?? 0) + 1} attempts)`,
        payload: sql`${JSON.stringify(data.payload ?? (data.slot ? { slot: data.slot } : {}))}::jsonb`,
      })
      .execute();
    if (data.job)
      this.services.log.error(
        { queue, job: data.job, tenantId: data.tenantId, slot: data.slot, error },
        'job run dead-lettered',
      );
    else {
      this.services.metrics?.deadLetters.inc({
        subscription: queue.startsWith(SUBSCRIPTION_QUEUE_PREFIX)
          ? queue.slice(SUBSCRIPTION_QUEUE_PREFIX.length)
          : queue,
      });
      this.services.log.error(
        { queue, event: data.name, eventId: data.id, requestId: data.requestId ?? null, error },
        'event delivery dead-lettered',
      );
    }
  }

  async stop(): Promise<void> {
    await this.relay.stop();
    // Before pg-boss stops: their jobs settle through it.
    await Promise.all(this.moduleQueueWorkers.map((w) => w.stop(10_000)));
    await this.boss.stop({ graceful: true, timeout: 10_000 });
  }
}
