import pg from 'pg';
import type { PgBoss } from 'pg-boss';
import type { Db } from '../db/pool.ts';
import { preparedQuery } from '../db/statements.ts';
import type { ModuleRegistry as Registry } from '../contracts/services.ts';
import type { DeliveredEvent } from '../entity/define.ts';
import { auditFromOutboxStatements, concernedTenantOf, type ConcernedTenantOf } from './audit.ts';
import { checkCrossTenantReads, concernedTenants, tenantFilters, type TenantFilter } from './concerned-tenants.ts';
import type { MetricSeries as Metrics } from '../contracts/services.ts';
import { linkTo, startOptionalSpan } from '../observability/tracing.ts';
import type { Link, Span } from '@opentelemetry/api';
import { POSITIONS_LOCK, liveNotifications, takePositions } from '../live/positions.ts';

export const OUTBOX_CHANNEL = 'tenantry_outbox';
export const SUBSCRIPTION_QUEUE_PREFIX = 'sub-';
export const subscriptionQueue = (name: string): string => `${SUBSCRIPTION_QUEUE_PREFIX}${name}`;
/** The event name a subscription gives to receive every event (e.g. outgoing webhooks). */
export const EVERY_EVENT = '*';

const BATCH = 500;
// waited: seconds since the event's transaction, for the relay-lag histogram (PostgreSQL's clock on both ends).
const CLAIM = `select id, event_id, tenant_id, name, payload, actor_id, occurred_at, request_id, traceparent, subject_entity,
                      extract(epoch from clock_timestamp() - occurred_at)::float8 as waited
                 from outbox where relayed_at is null order by id limit ${BATCH} for update skip locked`;
const MARK_RELAYED = 'update outbox set relayed_at = now() where id = any($1::bigint[])';
// The same, with the live positions of the events streams show (null for the others).
const MARK_RELAYED_AT = `update outbox o set relayed_at = now(), position = u.position
  from unnest($1::bigint[], $2::bigint[]) as u(id, position) where o.id = u.id`;
// The relay's commit does not wait for its WAL flush: losing it in a crash loses its marks, audit
// rows and jobs together, and the rows are relayed again (delivery is at least once; the audit row
// and every handler are keyed by the event id). Anything durable that follows from it, a
// handler's committed effect, flushes the WAL past it first. Its jobs' NOTIFY holds a cluster-wide
// lock through the commit, and on a busy disk the flush was a long part of an event's way to its
// handler (docs/performance.md, item 22). The same statement sets the transaction's
// statement_timeout (database.statement_timeout_ms), which no connection carries from its start-up.
const relaySettings = (statementTimeoutMs: number | undefined): string =>
  statementTimeoutMs === undefined
    ? `set local synchronous_commit = off`
    : `select set_config('synchronous_commit', 'off', true), set_config('statement_timeout', '${Math.trunc(statementTimeoutMs)}', true)`;
const RELAY_INTERVAL_MS = 1000;
/**
 * How long a pass woken by a commit waits before it claims (worker.relay_commit_wait_ms): the
 * events committed meanwhile go in the same pass. At 200 creates a second each commit woke a pass
 * that found its one event, and a pass is some 14 statements whatever it carries
 * (docs/performance.md, "Live streams"); the wait is added to commit→delivery latency.
 */
export const RELAY_COMMIT_WAIT_MS = 10;
const PURGE_INTERVAL_MS = 60_000;
/** Relayed rows are kept at least an hour (an operator tracing a request), longer when live.replay_minutes asks. */
const PURGE_AFTER_MINUTES = 60;
const PURGE_WINDOW = 10_000;
// The oldest rows by id, of which those relayed longer ago than the retention go: a bounded walk of the key,
// with no index on relayed_at to keep up on every mark. Rows are relayed in id order, near
// enough, so what is due sits at the start; a row held back there (a late commit, a relay
// outage) only narrows the window until it is relayed and old itself. The ids go in as an array:
// as `id in (…)` PostgreSQL joined them to a sequential scan of the whole table.
const PURGE = `
delete from outbox
 where id = any (array(select head.id
                         from (select id, relayed_at from outbox order by id limit ${PURGE_WINDOW}) as head
                        where head.relayed_at < now() - make_interval(mins => $1::int)))`;

export interface OutboxRow {
  id: string;
  event_id: string;
  tenant_id: string;
  name: string;
  payload: Record<string, unknown>;
  actor_id: string | null;
  occurred_at: Date;
  request_id: string | null;
  /** The W3C trace context of the span that wrote the event, while tracing was on. */
  traceparent: string | null;
  /** The entity a command changed a row of (outbox.subject_entity): streams of its list show the change. */
  subject_entity?: string | null;
  waited?: number;
}

/** A subscription's job: the event, and the trace context its delivery span continues. */
export type QueuedEvent = DeliveredEvent & { traceparent?: string | null };

/** The event a subscription receives, from its outbox row. */
export function deliveredEvent(row: OutboxRow): DeliveredEvent {
  return {
    id: row.event_id,
    name: row.name,
    tenantId: row.tenant_id,
    actorId: row.actor_id,
    occurredAt: row.occurred_at.toISOString(),
    payload: row.payload,
    requestId: row.request_id ?? null,
  };
}

/**
 * Moves committed outbox rows on: records each in its tenant's audit trail and queues one pg-boss
 * job per subscription of the event. Claiming (FOR UPDATE SKIP LOCKED), recording, enqueueing and
 * marking happen in one transaction, so several workers never relay a row twice, a crash relays
 * it again (the audit row is keyed by the event id), and an event is in the audit trail exactly
 * when it has been relayed. The audit trail takes no queue hop: a job per event cost an insert,
 * a fetch and a completion in pg-boss for what is one row (docs/performance.md).
 */
export class OutboxRelay {
  private readonly db: Db;
  private readonly boss: PgBoss;
  private readonly queuesByEvent: Map<string, string[]>;
  private readonly everyEvent: readonly string[];
  /** The subscriptions that concern some tenants only (onlyTenantsWith), by queue. */
  private readonly tenantFilters: ReadonlyMap<string, TenantFilter>;
  /** The customer tenant an operator's event concerns (ModuleDefinition.operatorEventsAbout): its activity records it too. */
  private readonly concernedTenant: ConcernedTenantOf;
  private listener: pg.Client | undefined;
  private timers: NodeJS.Timeout[] = [];
  private running: Promise<void> | undefined;
  private again = false;
  /** The pass a commit asked for, due at the end of the wait (one at a time, however many commits). */
  private due: NodeJS.Timeout | undefined;
  private readonly commitWaitMs: number;
  private stopped = false;
  private readonly intervalMs: number;
  private readonly metrics: Metrics | undefined;
  /** The events a stream shows, by name (framework/live): they get live positions as they are relayed. */
  private readonly liveEvents: ReadonlySet<string>;
  /** How long relayed rows are kept: an hour, or live.replay_minutes when longer (a stream resumes from them). */
  private readonly retentionMinutes: number;
  /** The statement that opens each relay transaction's settings (relaySettings), made once. */
  private readonly settings: string;

  /**
   * intervalMs: the polling backstop behind the commit wake-up (the spec's one second);
   * replayMinutes: live.replay_minutes, how far back a stream may resume; liveEvents: the events
   * some stream shows (services.live.events), which get live positions; commitWaitMs: how long a
   * pass woken by a commit waits for more (RELAY_COMMIT_WAIT_MS).
   */
  constructor(
    db: Db,
    boss: PgBoss,
    registry: Registry,
    options: {
      intervalMs?: number | undefined;
      metrics?: Metrics | undefined;
      replayMinutes?: number | undefined;
      liveEvents?: ReadonlySet<string> | undefined;
      commitWaitMs?: number | undefined;
    } = {},
  ) {
    this.intervalMs = options.intervalMs ?? RELAY_INTERVAL_MS;
    this.commitWaitMs = options.commitWaitMs ?? RELAY_COMMIT_WAIT_MS;
    this.metrics = options.metrics;
    this.liveEvents = options.liveEvents ?? new Set();
    this.retentionMinutes = Math.max(PURGE_AFTER_MINUTES, options.replayMinutes ?? 0);
    this.settings = relaySettings(db.statementTimeoutMs);
    this.db = db;
    this.boss = boss;
    this.queuesByEvent = new Map();
    for (const sub of registry.subscriptions) {
      if (sub.event === EVERY_EVENT) continue;
      const list = this.queuesByEvent.get(sub.event) ?? [];
      list.push(subscriptionQueue(sub.name));
      this.queuesByEvent.set(sub.event, list);
    }
    // A subscription to every event gets a job for each declared event (and for any other name an outbox row carries).
    const everyEvent = registry.subscriptions
      .filter((s) => s.event === EVERY_EVENT)
      .map((s) => subscriptionQueue(s.name));
    if (everyEvent.length > 0) {
      for (const name of registry.events)
        this.queuesByEvent.set(name, [...(this.queuesByEvent.get(name) ?? []), ...everyEvent]);
    }
    this.everyEvent = everyEvent;
    this.tenantFilters = tenantFilters(registry, subscriptionQueue);
    this.concernedTenant = concernedTenantOf(
      new Map(registry.modules.flatMap((m) => Object.entries(m.operatorEventsAbout ?? {}))),
    );
  }

  async start(): Promise<void> {
    await checkCrossTenantReads(this.db.pool, this.tenantFilters.values());
    // Directly to PostgreSQL (database.direct_url): a LISTEN through a pooler in transaction mode is lost.
    const listener = new pg.Client({ connectionString: this.db.directUrl });
    listener.on('error', () => {});
    await listener.connect();
    listener.on('notification', () => this.committed());
    await listener.query(`listen ${OUTBOX_CHANNEL}`);
    this.listener = listener;
    this.timers.push(setInterval(() => this.wake(), this.intervalMs));
    this.timers.push(setInterval(() => void this.purge().catch(() => {}), PURGE_INTERVAL_MS));
    void this.wake();
  }

  /**
   * A commit wrote outbox rows (its NOTIFY, or this process's own commit): relays within
   * commitWaitMs, in one pass with whatever else commits meanwhile. The wait runs from the first
   * commit, not the last, so a steady stream of commits cannot put the pass off.
   */
  committed(): void {
    if (this.stopped || this.due) return;
    if (this.commitWaitMs <= 0) {
      void this.wake();
      return;
    }
    this.due = setTimeout(() => {
      this.due = undefined;
      void this.wake();
    }, this.commitWaitMs);
  }

  /**
   * Relays now, without the commit wait (the polling backstop, start-up, a caller awaiting a
   * pass); calls arriving during a pass schedule exactly one more pass.
   */
  wake(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    // The pass about to claim (now, or right after the running one) takes what the waiting commits wrote.
    if (this.due) {
      clearTimeout(this.due);
      this.due = undefined;
    }
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          try {
            while ((await this.relayBatch()) === BATCH) {}
          } catch {
            // Rows stay unrelayed until a pass succeeds: the next tick retries, and so does a wake
            // that came during this pass (what failed may have been mended since, as it waited).
          }
        } while (this.again && !this.stopped);
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  async relayBatch(): Promise<number> {
    const client = await this.db.pool.connect();
    let span: Span | undefined;
    try {
      // The pool pipelines: BEGIN, the commit setting and the claim are written together, as are
      // the mark and COMMIT below (a failed mark turns that COMMIT into a rollback, and its error
      // is the one thrown).
      // One relay at a time (the lock): live positions follow the order of the relays' commits.
      const [, , , { rows }] = await Promise.all([
        client.query('begin'),
        client.query(this.settings),
        client.query(preparedQuery(POSITIONS_LOCK)),
        client.query<OutboxRow>(preparedQuery(CLAIM)),
      ]);
      if (rows.length === 0) {
        await client.query('commit');
        return 0;
      }
      const claimed = performance.now();
      // Tracing on: a span for a pass that moved events, linked to the spans that wrote them.
      const traced = startOptionalSpan('outbox.relay', {
        links: rows.map((r) => linkTo(r.traceparent)).filter((l): l is Link => l !== undefined),
        attributes: { 'tenantry.outbox.events': rows.length },
      });
      span = traced?.span;
      const jobsByQueue = new Map<string, { data: QueuedEvent }[]>();
      const concerned = await this.concernedTenants(client, rows);
      for (const row of rows) {
        const queues = this.queuesByEvent.get(row.name) ?? this.everyEvent;
        if (queues.length === 0) continue;
        const event: QueuedEvent = row.traceparent
          ? { ...deliveredEvent(row), traceparent: row.traceparent }
          : deliveredEvent(row);
        for (const queue of queues) {
          // A subscription concerning some tenants only gets no job for another tenant's event.
          const tenants = concerned.get(queue);
          if (tenants && !tenants.has(row.tenant_id)) continue;
          const list = jobsByQueue.get(queue) ?? [];
          list.push({ data: event });
          jobsByQueue.set(queue, list);
        }
      }
      // The events streams show take their tenants' next positions (framework/live/positions.ts).
      const positions = await takePositions(client, rows, (i) => this.shownLive(rows[i]!));
      const inTransaction = {
        executeSql: (text: string, values?: unknown[]) => client.query(preparedQuery(text, values)),
      };
      for (const [queue, jobs] of jobsByQueue) await this.boss.insert(queue, jobs, { db: inTransaction });
      // The audit rows, the mark and COMMIT go out together; the first failure is the one thrown
      // and turns the COMMIT into a rollback, so nothing is relayed without its audit row.
      // The audit trail, written in the claim's transaction: the audit "delivery" of the events.
      const audit = traced
        ? startOptionalSpan('outbox.audit', {
            parent: traced.context,
            attributes: { 'tenantry.outbox.events': rows.length },
          })
        : undefined;
      const live = positions.some((p) => p !== null);
      await Promise.all([
        ...auditFromOutboxStatements(rows, this.concernedTenant).map((statement) => client.query(statement)),
        client.query(
          live
            ? preparedQuery(MARK_RELAYED_AT, [rows.map((r) => r.id), positions])
            : preparedQuery(MARK_RELAYED, [rows.map((r) => r.id)]),
        ),
        // Every web process learns which tenants changed, on commit: their streams' callers are
        // checked again whatever the events were (a role set, a sign-out), the changes read.
        ...liveNotifications([...new Set(rows.map((r) => r.tenant_id))]).map((n) => client.query(n)),
        client.query('commit'),
      ]);
      audit?.span.end();
      span?.end();
      span = undefined;
      if (this.metrics) {
        const sinceClaim = (performance.now() - claimed) / 1000;
        for (const row of rows) this.metrics.relayLag.observe((row.waited ?? 0) + sinceClaim);
      }
      return rows.length;
    } catch (err) {
      await client.query('rollback').catch(() => {});
      span?.recordException(err as Error);
      span?.end();
      throw err;
    } finally {
      client.release();
    }
  }

  /**
   * For the filtered subscriptions some claimed row goes to: which of the batch's tenants they
   * concern, asked in one statement in the claiming transaction (docs/architecture.md).
   */
  private async concernedTenants(client: pg.PoolClient, rows: readonly OutboxRow[]): Promise<Map<string, Set<string>>> {
    if (this.tenantFilters.size === 0) return new Map();
    const filters = new Map<string, TenantFilter>();
    for (const row of rows) {
      for (const queue of this.queuesByEvent.get(row.name) ?? this.everyEvent) {
        const filter = this.tenantFilters.get(queue);
        if (filter) filters.set(queue, filter);
      }
    }
    if (filters.size === 0) return new Map();
    return concernedTenants(client, [...filters.values()], [...new Set(rows.map((r) => r.tenant_id))]);
  }

  /** Whether a stream shows the row's event: a declared live event, or a command's change of a row. */
  private shownLive(row: OutboxRow): boolean {
    return this.liveEvents.has(row.name) || (row.subject_entity ?? null) !== null;
  }

  /** Deletes the rows relayed longer ago than the retention, a window at a time; returns how many. */
  async purge(): Promise<number> {
    let purged = 0;
    for (;;) {
      const deleted = (await this.db.pool.query(PURGE, [this.retentionMinutes])).rowCount ?? 0;
      purged += deleted;
      if (deleted === 0 || this.stopped) return purged;
    }
  }

  async stop(): Promise<void> {
    // A commit's pass still waiting is run now, as it would have run before the wait existed.
    if (this.due) void this.wake();
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.running;
    await this.listener?.end().catch(() => {});
    this.listener = undefined;
  }
}
