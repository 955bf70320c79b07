import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import type { ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config/schema.ts';
import type { Db } from '../db/pool.ts';
import type { ChangeListener } from '../db/listener.ts';
import type { TenantRef } from '../context/tenant.ts';
import type { TenantTransactions, TxContext } from '../context/tx.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { LiveStreams } from '../contracts/services.ts';
import { problem } from '../errors.ts';
import { prepared } from '../db/statements.ts';
import { run } from '../operations/entity-sql.ts';
import { EventStream, type EndReason } from './event-stream.ts';
import { LIVE_CHANNEL, startPosition } from './positions.ts';
import { BATCH_EVENTS, batchStatement, columnParsers, parseBatch, type BatchResult } from './batch.ts';
import { selectingSerializer, streamQuery, type StreamFilter } from './stream-query.ts';
import { liveEventNames, type LiveSource } from './sources.ts';
import { LAST_EVENT_ID } from './stream-route.ts';
import { fanOut, type Outgoing } from './fan-out.ts';
import type { OpenStream } from './open-stream.ts';
import { BatchPacer } from './pacing.ts';
import { RowSerializers } from './row-serializers.ts';

/** Batches running at once in a process: each holds a pool connection for one short transaction. */
const CONCURRENT_BATCHES = 2;
/** A batch that failed (the database away) is tried again after this long; its streams stay open. */
const RETRY_AFTER_FAILURE_MS = 1000;
/** Retry-After of the 429s: a process full of streams, and a caller holding as many as it may. */
const PROCESS_FULL_RETRY_SECONDS = 5;
const CALLER_FULL_RETRY_SECONDS = 30;

type Values = Record<string, unknown>;

/** The open streams of one tenant in this process, and the state of its batches. */
interface TenantStreams {
  tenant: TenantRef;
  streams: Set<OpenStream>;
  queued: boolean;
  running: boolean;
  /** Something happened while it ran or waited: one more batch after this one. */
  again: boolean;
  lastBatchAt: number;
}

export interface LiveHubOptions {
  db: Db;
  transactions: TenantTransactions;
  config: Config['live'];
  sources: readonly LiveSource[];
  log: FastifyBaseLogger;
  metrics?: Metrics | undefined;
}

/**
 * The open streams of this web process, held in memory by tenant. The process learns of relayed
 * changes by NOTIFY (LIVE_CHANNEL, on its one LISTEN connection) and then runs, for each tenant
 * concerned, a batch: one transaction with one statement (batch.ts) that checks every open
 * stream's caller again and reads the changed rows once, however many streams are open. Between
 * batches no stream holds a database connection. Callers are also checked every
 * live.recheck_seconds, so a stream whose caller went ends even when nothing changes.
 */
export class LiveHub implements LiveStreams {
  /** The events some stream shows, by name: the relay gives them live positions. */
  readonly events: ReadonlySet<string>;
  /** The operation ids of the lists that can be followed (their streams' routes). */
  readonly operations: ReadonlySet<string>;
  private readonly options: LiveHubOptions;
  private readonly sources: ReadonlyMap<string, LiveSource>;
  private readonly byOperation: ReadonlyMap<string, LiveSource>;
  private readonly tenants = new Map<string, TenantStreams>();
  private readonly queue: TenantStreams[] = [];
  private readonly perCaller = new Map<string, number>();
  /** By tenant, the filters its streams hold (`<list>|<filter key>`), each with how many streams hold it. */
  private readonly filters = new Map<string, Map<string, number>>();
  private readonly running = new Set<Promise<void>>();
  private readonly pacer: BatchPacer<TenantStreams>;
  private parsers: Map<string, ((text: string) => unknown)[]> | undefined;
  private readonly statements = new Map<string, string>();
  /** Row serializers by list and `fields=`: streams that name the same fields share one (and its text per row). */
  private readonly serializers = new RowSerializers();
  private open_ = 0;
  private reserved = 0;
  private timers: NodeJS.Timeout[] = [];
  private stopped = false;

  constructor(options: LiveHubOptions) {
    this.options = options;
    this.sources = new Map(options.sources.map((source) => [source.key, source]));
    this.byOperation = new Map(options.sources.map((source) => [source.operationId, source]));
    this.operations = new Set(this.byOperation.keys());
    this.events = liveEventNames(options.sources);
    this.pacer = new BatchPacer(options.config.batch_interval_ms);
  }

  /** Subscribes to the relay's notifications (before the listener starts). */
  listen(listener: ChangeListener): void {
    listener.on(LIVE_CHANNEL, (payload) => {
      for (const tenantId of payload.split(',')) {
        const group = this.tenants.get(tenantId);
        if (group) this.schedule(group);
      }
    });
    // Notifications may have been missed while the listener was away: every tenant catches up.
    listener.onLost(() => {
      for (const group of this.tenants.values()) this.schedule(group);
    });
  }

  /** Readies the batches (each list's column types) and starts the heartbeat and the caller checks: a web process. */
  async start(): Promise<void> {
    this.parsers = await columnParsers(this.options.db.pool, this.options.sources);
    const { heartbeat_seconds: heartbeat, recheck_seconds: recheck } = this.options.config;
    this.timers.push(setInterval(() => this.heartbeat(), heartbeat * 1000));
    // Half the interval: a caller is checked again at most recheck_seconds after its last check.
    this.timers.push(setInterval(() => this.recheck(recheck * 1000), (recheck * 1000) / 2));
    // The busy tenants' held changes go out together, one batch per tenant and tick (pacing.ts).
    if (this.pacer.paces)
      this.timers.push(setInterval(() => this.releaseHeld(), this.options.config.batch_interval_ms));
    for (const timer of this.timers) timer.unref();
  }

  /** Stream connections open in this process (one that carries several lists counts once). */
  get openStreams(): number {
    return this.open_;
  }

  /**
   * Opens a stream for the caller of the list route's transaction: reads its query (the list's
   * filters and fields: 422 or 403 for what the list would refuse), refuses past the limits (429),
   * reads where it starts (Last-Event-ID), and hands fastify the Readable to send. The stream joins
   * its tenant's once the transaction has committed; a first batch then replays what it missed.
   */
  async open(
    tx: TxContext,
    list: string,
    request: FastifyRequest,
    reply: FastifyReply,
    query: Readonly<Record<string, unknown>> = {},
  ): Promise<Readable> {
    const source = this.sources.get(list);
    if (!source) throw new Error(`no live list ${list}`);
    return this.connect(tx, [{ source, name: undefined, query }], request, reply);
  }

  /**
   * Opens one connection that carries several lists (the admin shell's one stream per browser),
   * named by their streams' operation ids, for a caller the route admitted to each: every list's
   * events go out as `<operation id>:<event>`, with one position, one Last-Event-ID and one place
   * among the caller's live.max_streams_per_caller. The lists take no filters here. The lists in
   * `fresh` start now whatever the Last-Event-ID: the client followed them on no earlier
   * connection, so what came before is nothing it missed. The connection opens with its start
   * position as an `id:`.
   */
  follow(
    tx: TxContext,
    operationIds: readonly string[],
    request: FastifyRequest,
    reply: FastifyReply,
    fresh: ReadonlySet<string> = new Set(),
  ): Promise<Readable> {
    const channels = [...new Set(operationIds)].map((operationId) => {
      const source = this.byOperation.get(operationId);
      if (!source) throw new Error(`no live list ${operationId}`);
      return { source, name: operationId, query: {}, fresh: fresh.has(operationId) };
    });
    return this.connect(tx, channels, request, reply);
  }

  private async connect(
    tx: TxContext,
    channels: readonly {
      source: LiveSource;
      name: string | undefined;
      query: Readonly<Record<string, unknown>>;
      fresh?: boolean;
    }[],
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<Readable> {
    if (!this.parsers || this.stopped) throw problem('NOT_READY', 'This process does not serve streams');
    const asked = channels.map(({ source, query }) => streamQuery(tx, source, query));
    const session = tx.session;
    // The stream route's guard admitted a caller holding the list's read permission before this runs.
    if (!session) throw new Error('a stream opens for a signed-in caller only');
    const caller = `${session.via === 'token' ? 'token' : 'session'}:${session.id}`;
    const filters = channels.flatMap(({ source }, i) => {
      const filter = asked[i]!.filter;
      return filter ? [`${source.key}|${filter.key}`] : [];
    });
    const letGo = this.holdFilters(tx.tenant.id, filters);
    tx.onRollback(letGo);
    const release = this.reserve(`${tx.tenant.id}/${caller}`);
    tx.onRollback(release);
    const header = request.headers[LAST_EVENT_ID];
    const start = await startPosition(
      tx,
      typeof header === 'string' ? Number(header) : undefined,
      this.options.config.replay_minutes,
    );
    const sse = new EventStream(reply.raw, this.options.config.max_buffer_bytes, this.dropped);
    const streams = channels.map(({ source, name, fresh }, i): OpenStream => {
      const { permissions, filter, fields, selection } = asked[i]!;
      const access = source.accessOf(tx);
      return {
        source,
        sse,
        name,
        position: fresh ? start.current : start.position,
        caller,
        permission: typeof source.access === 'object' ? source.access.permission : undefined,
        access,
        needs: permissions,
        filter,
        serialize: this.serializers.of(source.key, fields, () =>
          selection
            ? selectingSerializer(selection)
            : (reply.compileSerializationSchema(source.rowSchema as Values) as (row: unknown) => string),
        ),
        // The name is part of the shape: it is in every event's name on the wire.
        shape: JSON.stringify([source.key, name ?? null, fields, filter?.key ?? null, access], jsonSafe),
      };
    });
    this.joinOnCommit(tx, reply.raw, sse, streams, release, letGo);
    reply.header('content-type', 'text/event-stream; charset=utf-8').header('x-accel-buffering', 'no');
    // Where it starts, as an `id:`: a client that sees no event before the connection ends (a
    // shutdown, a network drop) still resumes from there with Last-Event-ID, missing nothing.
    sse.open(start.position);
    if (start.reset) sse.event('reset', '{}', start.position);
    return sse.readable;
  }

  /** A client that did not read was dropped (event-stream.ts): one function for every stream. */
  private readonly dropped = (): void => this.options.metrics?.liveDroppedSlow.inc();

  /**
   * The connection's streams join their tenant's once the transaction commits, and leave when it
   * closes, giving back their place and their filters (`release`, `letGo`). Apart from connect(): a closure made there would keep its whole scope (the
   * transaction, the request's query) alive as long as the connection is open.
   */
  private joinOnCommit(
    tx: TxContext,
    response: ServerResponse,
    sse: EventStream,
    streams: readonly OpenStream[],
    release: () => void,
    letGo: () => void,
  ): void {
    const tenant = tx.tenant;
    let attached = false;
    const gone = () => {
      sse.close();
      if (attached) this.detach(tenant.id, streams);
      release();
      letGo();
    };
    // A client that left while the stream was opening (its 'close' already emitted, never again)
    // gives its place back now: else the caller's and the process's counts would keep it for good.
    if (response.destroyed) gone();
    else response.once('close', gone);
    tx.afterCommit(() => {
      if (sse.isClosed) return;
      // The process began to shut down while it opened: it ends as close() ended the others (its
      // client resumes elsewhere), rather than join a hub that will send it nothing, nor end it.
      if (this.stopped) return sse.close();
      attached = true;
      this.attach(tenant, streams);
    });
  }

  /**
   * Ends every stream (shutdown): each answer ends cleanly, its client reconnects (elsewhere) from
   * its last event id, and nothing is lost. Waits for the batches under way.
   */
  async close(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
    for (const group of this.tenants.values()) for (const stream of group.streams) stream.sse.close();
    await Promise.allSettled([...this.running]);
  }

  /**
   * Holds the new stream's filters (`<list>|<filter key>`) among its tenant's; the function lets
   * them go, once. Refuses a filter none of the tenant's streams holds once they hold
   * live.max_filters_per_tenant distinct ones: the tenant's batch statement evaluates each, and
   * its parameters are bounded. A stream holds them from here, while it is still opening too, so
   * openings under way at once are counted.
   */
  private holdFilters(tenantId: string, filters: readonly string[]): () => void {
    if (filters.length === 0) return () => {};
    const max = this.options.config.max_filters_per_tenant;
    const held = this.filters.get(tenantId) ?? new Map<string, number>();
    const added = new Set(filters.filter((filter) => !held.has(filter)));
    if (added.size > 0 && held.size + added.size > max)
      throw problem(
        'RATE_LIMITED',
        `The streams open on this site hold as many different filters as they may (${max}); follow with a filter already followed, or try again shortly`,
        { extensions: { retryAfterSeconds: CALLER_FULL_RETRY_SECONDS } },
      );
    for (const filter of filters) held.set(filter, (held.get(filter) ?? 0) + 1);
    this.filters.set(tenantId, held);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const filter of filters) {
        const holders = (held.get(filter) ?? 1) - 1;
        if (holders > 0) held.set(filter, holders);
        else held.delete(filter);
      }
      if (held.size === 0 && this.filters.get(tenantId) === held) this.filters.delete(tenantId);
    };
  }

  /** Takes a place for a new stream of the caller (key: tenant and caller); the function gives it back, once. */
  private reserve(key: string): () => void {
    const { max_streams: max, max_streams_per_caller: perCaller } = this.options.config;
    if (this.reserved >= max)
      throw problem('RATE_LIMITED', `This server holds as many streams as it may (${max}); try again shortly`, {
        extensions: { retryAfterSeconds: PROCESS_FULL_RETRY_SECONDS },
      });
    const held = this.perCaller.get(key) ?? 0;
    if (held >= perCaller)
      throw problem('RATE_LIMITED', `This session or token already holds ${perCaller} open streams; close one first`, {
        extensions: { retryAfterSeconds: CALLER_FULL_RETRY_SECONDS },
      });
    this.reserved++;
    this.perCaller.set(key, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.reserved--;
      const left = (this.perCaller.get(key) ?? 1) - 1;
      if (left > 0) this.perCaller.set(key, left);
      else this.perCaller.delete(key);
    };
  }

  /** A connection's streams join their tenant's (one list each; several on a shared connection). */
  private attach(tenant: TenantRef, streams: readonly OpenStream[]): void {
    let group = this.tenants.get(tenant.id);
    if (!group) {
      group = {
        tenant,
        streams: new Set(),
        queued: false,
        running: false,
        again: false,
        lastBatchAt: performance.now(),
      };
      this.tenants.set(tenant.id, group);
    }
    for (const stream of streams) group.streams.add(stream);
    this.open_++;
    this.options.metrics?.liveStreams.inc();
    // What committed between its start position and now reaches it with the next batch.
    this.schedule(group);
  }

  /** A connection's streams leave (it closed, or ended): it was counted once, as it was attached. */
  private detach(tenantId: string, streams: readonly OpenStream[]): void {
    const group = this.tenants.get(tenantId);
    if (!group) return;
    let left = false;
    for (const stream of streams) if (group.streams.delete(stream)) left = true;
    if (!left) return;
    this.open_--;
    this.options.metrics?.liveStreams.dec();
    if (group.streams.size === 0 && !group.running && !group.queued) this.forget(group);
  }

  private forget(group: TenantStreams): void {
    this.tenants.delete(group.tenant.id);
    this.pacer.forget(group);
  }

  /** One comment line per connection, however many lists it carries. */
  private heartbeat(): void {
    const connections = new Set<EventStream>();
    for (const group of this.tenants.values()) for (const stream of group.streams) connections.add(stream.sse);
    for (const sse of connections) sse.heartbeat();
  }

  private recheck(intervalMs: number): void {
    const due = performance.now() - intervalMs / 2;
    for (const group of this.tenants.values()) if (group.lastBatchAt <= due) this.schedule(group);
  }

  private schedule(group: TenantStreams): void {
    if (this.stopped) return;
    if (group.running || group.queued) {
      group.again = true;
      return;
    }
    // A tenant batched a moment ago waits for the next tick, gathering what else arrives meanwhile.
    if (!this.pacer.admit(group)) return;
    this.enqueue(group);
  }

  private enqueue(group: TenantStreams): void {
    group.queued = true;
    this.queue.push(group);
    this.pump();
  }

  /** Each tenant held since the last tick gets one batch now, however many changes it gathered. */
  private releaseHeld(): void {
    for (const group of this.pacer.release()) {
      if (this.stopped || this.tenants.get(group.tenant.id) !== group) continue;
      if (group.running || group.queued) group.again = true;
      else this.enqueue(group);
    }
  }

  private pump(): void {
    while (this.running.size < CONCURRENT_BATCHES && this.queue.length > 0) {
      const group = this.queue.shift()!;
      group.queued = false;
      group.running = true;
      group.again = false;
      const done: Promise<void> = this.drain(group).finally(() => {
        this.running.delete(done);
        group.running = false;
        if (group.streams.size === 0) this.forget(group);
        else if (group.again) this.schedule(group);
        this.pump();
      });
      this.running.add(done);
    }
  }

  /** Batches until the tenant's streams have read everything there is. */
  private async drain(group: TenantStreams): Promise<void> {
    try {
      while (!this.stopped && (await this.batch(group))) {}
    } catch (err) {
      this.options.log.warn({ err, tenant: group.tenant.id }, 'live batch failed; retrying');
      setTimeout(() => this.schedule(group), RETRY_AFTER_FAILURE_MS).unref();
    }
  }

  /** One batch of the tenant: true when it read a full batch of events (more may wait). */
  private async batch(group: TenantStreams): Promise<boolean> {
    const streams = [...group.streams].filter((s) => !s.sse.isClosed);
    if (streams.length === 0) return false;
    group.lastBatchAt = performance.now();
    this.pacer.started(group);
    const sources = [...new Set(streams.map((s) => s.source))].sort((a, b) => a.key.localeCompare(b.key));
    const from = Math.min(...streams.map((s) => s.position));
    const callers = new Set(streams.map((s) => s.caller));
    const ids = (kind: string) =>
      [...callers].filter((c) => c.startsWith(`${kind}:`)).map((c) => c.slice(kind.length + 1));
    const filters = sources.map((source) => filtersOf(streams, source));
    const statement = this.statementFor(sources, filters);
    const result = await this.options.transactions.run(group.tenant, async (tx) => {
      const [row] = await run<Values>(tx.db, statement.text, [
        from,
        BATCH_EVENTS,
        ids('session'),
        ids('token'),
        tx.now,
        ...statement.params,
      ]);
      const read = parseBatch(row!, sources, this.parsers!);
      await this.present(tx, sources, read);
      return read;
    });
    this.options.metrics?.liveBatches.inc();
    if (!result.served) {
      // A suspended tenant: its host now answers every list 404 NO_SITE. The streams close as at a
      // shutdown, without `end`, so a client reconnects and is answered as the list would be.
      for (const stream of streams) stream.sse.close();
      return false;
    }
    const readAt = performance.now();
    const indexes = filters.map((list) => new Map(list.map((filter, i) => [filter.key, i])));
    this.deliver(group, streams, sources, indexes, result, readAt);
    return result.changes.length === BATCH_EVENTS;
  }

  /** The items of the changed rows, as the list answers them (afterRead run once per row). */
  private async present(tx: TxContext, sources: readonly LiveSource[], read: BatchResult): Promise<void> {
    for (const [i, source] of sources.entries()) {
      for (const row of read.rows[i]!.values()) {
        const item = source.item(row.values);
        row.item = source.present ? await source.present(tx, item) : item;
      }
    }
  }

  private deliver(
    group: TenantStreams,
    streams: readonly OpenStream[],
    sources: readonly LiveSource[],
    filters: readonly ReadonlyMap<string, number>[],
    read: BatchResult,
    readAt: number,
  ): void {
    const live = streams.filter((stream) => {
      const reason = refusal(stream, read.callers);
      if (!reason) return true;
      stream.sse.end(reason);
      return false;
    });
    const metrics = this.options.metrics;
    // A connection that carries several lists gets its lists' events in one write, in commit order
    // (its Last-Event-ID must never pass an event it has not been sent); a list's own connection
    // gets its group's shared bytes.
    const carried = new Map<EventStream, { position: number; text: string }[]>();
    for (const out of fanOut(live, sources, filters, read)) {
      let sent = 0;
      for (const stream of out.streams) {
        if (stream.name === undefined) {
          if (stream.sse.send(out.chunk)) sent++;
          continue;
        }
        const events = carried.get(stream.sse) ?? [];
        if (events.length === 0) carried.set(stream.sse, events);
        for (const { change, text } of out.events) events.push({ position: change.position, text });
        sent++;
      }
      if (metrics && sent > 0) observe(metrics, out, sent, readAt);
    }
    for (const [sse, events] of carried) {
      events.sort((a, b) => a.position - b.position);
      sse.send(Buffer.from(events.map((e) => e.text).join('')));
    }
    const last = read.changes.at(-1)?.position;
    if (last !== undefined) for (const stream of live) if (stream.position < last) stream.position = last;
    // A connection's streams all close with it: they leave together, counted once.
    const closed = new Map<EventStream, OpenStream[]>();
    for (const stream of streams)
      if (stream.sse.isClosed) closed.set(stream.sse, [...(closed.get(stream.sse) ?? []), stream]);
    for (const gone of closed.values()) this.detach(group.tenant.id, gone);
  }

  /**
   * The batch's statement: without filters, one prepared text per set of sources; with them, its
   * text varies with the filters the tenant's streams hold, so it is sent unnamed (planned once).
   */
  private statementFor(
    sources: readonly LiveSource[],
    filters: readonly (readonly StreamFilter[])[],
  ): { text: string; params: unknown[] } {
    if (filters.some((list) => list.length > 0)) return batchStatement(sources, filters);
    const key = sources.map((s) => s.key).join('|');
    let text = this.statements.get(key);
    if (!text) {
      text = prepared(batchStatement(sources).text);
      this.statements.set(key, text);
    }
    return { text, params: [] };
  }
}

/** Why the stream's caller may no longer follow it, as the list's route would refuse them now; none: they may. */
function refusal(stream: OpenStream, callers: ReadonlyMap<string, ReadonlySet<string>>): EndReason | undefined {
  const permissions = callers.get(stream.caller);
  if (!permissions) return 'AUTH_REQUIRED';
  if (permissions.has('*')) return undefined;
  if (stream.permission && !permissions.has(stream.permission)) return 'AUTH_FORBIDDEN';
  if (stream.needs.some((permission) => !permissions.has(permission))) return 'AUTH_FORBIDDEN';
  return undefined;
}

/** The distinct filters the streams of a source hold (one evaluation each in the batch statement). */
function filtersOf(streams: readonly OpenStream[], source: LiveSource): StreamFilter[] {
  const byKey = new Map<string, StreamFilter>();
  for (const stream of streams)
    if (stream.source === source && stream.filter) byKey.set(stream.filter.key, stream.filter);
  return [...byKey.values()];
}

/** A row-access value of any column type as JSON (a bigint column's value too). */
const jsonSafe = (_key: string, value: unknown): unknown => (typeof value === 'bigint' ? `${value}n` : value);

/** Each event of `out`, delivered on `streams` streams: counted, and its latency observed, once per stream. */
function observe(metrics: Metrics, out: Outgoing, streams: number, readAt: number): void {
  const sinceRead = (performance.now() - readAt) / 1000;
  for (const { event, change } of out.events) {
    metrics.liveDelivered.inc({ event }, streams);
    const latency = change.age + sinceRead;
    for (let i = 0; i < streams; i++) metrics.liveLatency.observe(latency);
  }
}
