import type pg from 'pg';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { MetricSeries, QueueFigures } from '../contracts/services.ts';

/**
 * The Prometheus series of one process (docs/observability.md lists each with its meaning). Every
 * label is bounded by the declarations: an operation id, a method, a status class, a subscription,
 * a job, a queue, a tenant status. Never a tenant, a user, a host or anything else a request
 * brings. Gauges that describe shared state (the outbox, the tenants, the queues) are read at
 * scrape time, so every process reports the same figure: aggregate them with max(), not sum().
 */

/** What a pool gauge needs to know of the pool; see poolState. */
export interface PoolState {
  total: number;
  idle: number;
  waiting: number;
}

/**
 * The request path's pool state, read through pg.Pool's public counters. The one place that knows
 * which pool the gauges describe: a change of database transport re-points this function.
 */
export function poolState(pool: pg.Pool): PoolState {
  return { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount };
}

export type { QueueFigures } from '../contracts/services.ts';

/** What the scrape-time gauges read: supplied by the composition (app.ts), the worker adds its queues. */
export interface MetricSources {
  pool(): PoolState;
  /** Outbox rows not yet relayed; undefined to leave the gauge as it was (the pool is busy). */
  unrelayedEvents(): Promise<number | undefined>;
  /** Tenants by status (active, suspended); undefined as above. */
  tenantsByStatus(): Promise<Record<string, number> | undefined>;
}

/** The read replica's series (Metrics.replicaSeries). */
export interface ReplicaSeries {
  lag: Gauge;
  inUse: Gauge;
  reads: Counter<'served_by'>;
  checks: Counter;
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const WAIT_BUCKETS = [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5];
const LAG_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** `2xx`, `4xx`, ...: the status class of the duration histogram. */
export const statusClass = (status: number): string => `${Math.floor(status / 100)}xx`;

export class Metrics implements MetricSeries {
  readonly registry = new Registry();
  readonly httpDuration: Histogram<'operation' | 'method' | 'status_class'>;
  readonly httpInFlight: Gauge;
  readonly rateLimited: Counter<'operation'>;
  readonly failedLogins: Counter;
  readonly acquireWait: Histogram;
  readonly relayLag: Histogram;
  readonly deliveryFailures: Counter<'subscription'>;
  readonly deadLetters: Counter<'subscription'>;
  readonly jobLastSuccess: Gauge<'job'>;
  readonly jobLastDuration: Gauge<'job'>;
  readonly jobFailures: Counter<'job'>;
  readonly liveStreams: Gauge;
  readonly liveDelivered: Counter<'event'>;
  readonly liveLatency: Histogram;
  readonly liveDroppedSlow: Counter;
  readonly liveBatches: Counter;
  #queues: (() => Promise<QueueFigures[]>) | undefined;
  #replica: ReplicaSeries | undefined;
  readonly #onError: (err: unknown, series: string) => void;

  constructor(sources: MetricSources, onError: (err: unknown, series: string) => void = () => {}) {
    const registers = [this.registry];
    this.#onError = onError;
    collectDefaultMetrics({ register: this.registry, prefix: 'tenantry_' });

    this.httpDuration = new Histogram({
      name: 'tenantry_http_request_duration_seconds',
      help: 'Time from a request arriving to its answer being written, by OpenAPI operation id (or admin page kind), method and status class',
      labelNames: ['operation', 'method', 'status_class'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.httpInFlight = new Gauge({
      name: 'tenantry_http_requests_in_flight',
      help: 'Requests received and not yet answered',
      registers,
    });
    this.rateLimited = new Counter({
      name: 'tenantry_http_rate_limited_total',
      help: 'Requests answered 429 (too many sign-in attempts and other rate limits), by operation',
      labelNames: ['operation'],
      registers,
    });
    this.failedLogins = new Counter({
      name: 'tenantry_auth_failed_logins_total',
      help: 'Sign-ins refused for a wrong address or password (401 ErrCredentials)',
      registers,
    });

    const state = () => sources.pool();
    new Gauge({
      name: 'tenantry_db_pool_connections',
      help: 'Connections the request pool holds open (in use and idle)',
      registers,
      collect() {
        this.set(state().total);
      },
    });
    new Gauge({
      name: 'tenantry_db_pool_idle_connections',
      help: 'Open pool connections nobody is using',
      registers,
      collect() {
        this.set(state().idle);
      },
    });
    new Gauge({
      name: 'tenantry_db_pool_waiting_requests',
      help: 'Checkouts waiting for a pool connection',
      registers,
      collect() {
        this.set(state().waiting);
      },
    });
    this.acquireWait = new Histogram({
      name: 'tenantry_db_pool_acquire_wait_seconds',
      help: 'Time a checkout waited for a pool connection (failed checkouts included)',
      buckets: WAIT_BUCKETS,
      registers,
    });

    const guarded = this.#guarded.bind(this);
    new Gauge({
      name: 'tenantry_outbox_unrelayed_events',
      help: 'Outbox rows committed and not yet relayed (read at scrape time)',
      registers,
      async collect() {
        await guarded('tenantry_outbox_unrelayed_events', async () => {
          const count = await sources.unrelayedEvents();
          if (count !== undefined) this.set(count);
        });
      },
    });
    this.relayLag = new Histogram({
      name: 'tenantry_outbox_relay_lag_seconds',
      help: "Time from an event's transaction to the commit of the relay that moved it on",
      buckets: LAG_BUCKETS,
      registers,
    });
    this.deliveryFailures = new Counter({
      name: 'tenantry_outbox_delivery_failures_total',
      help: 'Failed deliveries of an event to a subscription (each retry that fails counts)',
      labelNames: ['subscription'],
      registers,
    });
    this.deadLetters = new Counter({
      name: 'tenantry_outbox_dead_letters_total',
      help: 'Event deliveries that exhausted their retries and were recorded in dead_letters',
      labelNames: ['subscription'],
      registers,
    });

    const queues = () => this.#queues;
    new Gauge({
      name: 'tenantry_queue_depth',
      help: 'Jobs waiting in a pg-boss queue (ready and deferred), read at scrape time by worker processes',
      labelNames: ['queue'],
      registers,
      async collect() {
        const read = queues();
        if (!read) return;
        await guarded('tenantry_queue_depth', async () => {
          for (const q of await read()) {
            this.set({ queue: q.name }, q.queuedCount);
            failedGauge.set({ queue: q.name }, q.failedCount);
          }
        });
      },
    });
    // Read with the depth, in the same call to pg-boss.
    const failedGauge = new Gauge({
      name: 'tenantry_queue_failed_jobs',
      help: 'Failed jobs pg-boss still keeps in a queue (a rolling count bounded by its retention)',
      labelNames: ['queue'],
      registers,
    });

    this.jobLastSuccess = new Gauge({
      name: 'tenantry_job_last_success_timestamp_seconds',
      help: 'When a run of the job last succeeded (Unix time), in this process',
      labelNames: ['job'],
      registers,
    });
    this.jobLastDuration = new Gauge({
      name: 'tenantry_job_last_duration_seconds',
      help: 'How long the last run of the job took, succeeded or failed',
      labelNames: ['job'],
      registers,
    });
    this.jobFailures = new Counter({
      name: 'tenantry_job_failures_total',
      help: 'Failed runs of a job (each attempt counts)',
      labelNames: ['job'],
      registers,
    });

    this.liveStreams = new Gauge({
      name: 'tenantry_live_streams',
      help: "Streams of live changes (GET .../stream, an admin page's /admin/_live/stream) this web process holds open, one per connection",
      registers,
    });
    this.liveDelivered = new Counter({
      name: 'tenantry_live_events_delivered_total',
      help: 'Events written to open streams, by event (created, updated, deleted, removed)',
      labelNames: ['event'],
      registers,
    });
    this.liveLatency = new Histogram({
      name: 'tenantry_live_delivery_latency_seconds',
      help: "Time from an event's transaction to its delivery on a stream (each delivered event counts)",
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.liveDroppedSlow = new Counter({
      name: 'tenantry_live_streams_dropped_slow_total',
      help: 'Streams dropped because their client did not read what waited for it (past live.max_buffer_bytes)',
      registers,
    });
    this.liveBatches = new Counter({
      name: 'tenantry_live_batches_total',
      help: 'Batches read for the open streams: one transaction, one statement, per tenant with changes or a caller check due',
      registers,
    });

    new Gauge({
      name: 'tenantry_tenants',
      help: 'Tenants, by status (active, suspended), read at scrape time',
      labelNames: ['status'],
      registers,
      async collect() {
        await guarded('tenantry_tenants', async () => {
          const counts = await sources.tenantsByStatus();
          if (counts) for (const status of ['active', 'suspended']) this.set({ status }, counts[status] ?? 0);
        });
      },
    });
  }

  /**
   * The read replica's series (database.replica_url): registered by the first call, so an
   * installation without a replica shows none of them.
   */
  replicaSeries(): ReplicaSeries {
    if (this.#replica) return this.#replica;
    const registers = [this.registry];
    this.#replica = {
      lag: new Gauge({
        name: 'tenantry_db_replica_lag_seconds',
        help: "The replica's replay lag at its last check (once a second); +Inf when it could not be read",
        registers,
      }),
      inUse: new Gauge({
        name: 'tenantry_db_replica_in_use',
        help: '1 while reads that may lag go to the replica; 0 while they go to the primary (the lag past database.replica_max_lag_ms, or the replica unreachable)',
        registers,
      }),
      reads: new Counter({
        name: 'tenantry_db_replica_reads_total',
        help: 'Requests that could read from the replica, by who served them: replica, or primary (it lagged or was unreachable)',
        labelNames: ['served_by'],
        registers,
      }),
      checks: new Counter({
        name: 'tenantry_db_replica_lag_checks_total',
        help: "Checks of the replica's lag made (one a second at most, outside any request)",
        registers,
      }),
    };
    return this.#replica;
  }

  /** The worker's pg-boss queues, read at scrape time. */
  watchQueues(read: () => Promise<QueueFigures[]>): void {
    this.#queues = read;
  }

  /** One HTTP answer. */
  observeRequest(operation: string, method: string, status: number, seconds: number): void {
    this.httpDuration.observe({ operation, method, status_class: statusClass(status) }, seconds);
    if (status === 429) this.rateLimited.inc({ operation });
  }

  /** One job run, done or failed. */
  observeJob(job: string, ok: boolean, seconds: number, endedAt: Date): void {
    this.jobLastDuration.set({ job }, seconds);
    if (ok) this.jobLastSuccess.set({ job }, endedAt.getTime() / 1000);
    else this.jobFailures.inc({ job });
  }

  /** The text exposition of every series. */
  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  /** A scrape-time read that fails (the database away) leaves its gauge as it was; the scrape goes on. */
  async #guarded(series: string, read: () => Promise<void>): Promise<void> {
    try {
      await read();
    } catch (err) {
      this.#onError(err, series);
    }
  }
}
