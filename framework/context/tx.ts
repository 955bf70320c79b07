import { CompiledQuery, type Transaction } from 'kysely';
import { asTransactionBody, type Db } from '../db/pool.ts';
import { deferred, exchange, prepared, type Answer, type Statement } from '../db/statements.ts';
import type { Database } from '../db/types.ts';
import { uuidv7 } from '../db/uuidv7.ts';
import type { TenantRef } from './tenant.ts';
import { assertSafePayload } from '../events/payload-policy.ts';
import type { OutboxSignal } from '../events/outbox-signal.ts';
import { problem } from '../errors.ts';
import { systemClock, type Clock } from '../clock.ts';
import { currentTraceparent, traceExchange } from '../observability/tracing.ts';
import { currentRequestId } from '../observability/request-id.ts';

export const APP_ROLE = 'tenantry_app';
/** The transaction-local setting the opening statement leaves the caller's permissions in. */
export const PERMISSIONS_SETTING = 'app.permissions';
/** And the signed-in user's id (empty without a session): the actor of events a one-exchange write publishes. */
export const ACTOR_SETTING = 'app.actor_id';

/**
 * A SQL condition true when the transaction's caller holds the permission (or the wildcard), read
 * from what the opening statement set: a statement sent in the same write as the opening one
 * finds no row for a caller without it, and does no work for one. The permission is a declared
 * name, fixed at boot, never a request's value.
 */
export function permissionPredicate(permission: string): string {
  const literal = (value: string) => `'${value.replaceAll("'", "''")}'`;
  return `string_to_array(current_setting('${PERMISSIONS_SETTING}', true), ',') && array[${literal(permission)}, '*']`;
}

export interface SessionInfo {
  id: string;
  userId: string;
  permissions: ReadonlySet<string>;
  lastSeenAt: Date;
  /** Set when this request slid the expiry forward: seconds the session now has left, for the cookie's Max-Age. */
  renewedForSeconds?: number;
}

export interface PendingEvent {
  name: string;
  payload: Record<string, unknown>;
}

/**
 * Everything a handler, hook, command or subscription gets inside a tenant transaction. E is what
 * `publish` accepts: a route's or command's own `publishes` list, so publishing anything else
 * does not compile (and is refused at run time, for code the types cannot see).
 */
export interface TxContext<E extends string = string> {
  readonly tenant: TenantRef;
  readonly db: Transaction<Database>;
  readonly session: SessionInfo | null;
  readonly actorId: string | null;
  readonly declaredEvents: ReadonlySet<string>;
  /** The time of this transaction, read once from the clock when it opened: compare with this, not now(). */
  readonly now: Date;
  /** Records an event in this transaction's outbox; delivered only after commit. */
  publish(name: E, payload?: Record<string, unknown>): void;
  /** True when the caller's roles grant the permission (the wildcard grants all). */
  can(permission: string): boolean;
  /**
   * Runs fn once this transaction has rolled back (a thrown refusal, a failed commit), outside it:
   * for work that must commit although the request's own work does not, such as counting a
   * failed attempt. It may open transactions of its own; code inside a transaction may not.
   * The transaction's error is rethrown after the hooks, unless a hook fails: then its error is.
   */
  onRollback(fn: AfterTransaction): void;
  /** Runs fn once this transaction has committed, outside it, before run() returns. */
  afterCommit(fn: AfterTransaction): void;
}

export type AfterTransaction = () => unknown;

/** The work of a one-exchange request (TenantTransactions.runStatement). */
export interface OneStatement {
  statement: Statement;
  /** The permission the statement checks itself; the outbox insert of `events` checks it too. */
  permission: string;
  /** Events the statement's write publishes, known before it runs (its ids made in the process). */
  events?: PendingEvent[];
}

/** The events one route or command may publish, and who it is, for the refusal's message. */
export interface PublishAllowList {
  events: ReadonlySet<string>;
  by: string;
}

export interface TxOptions {
  /** SHA-256 of the session cookie's id: resolves the session and its permissions in the opening statement. */
  sessionHash?: Buffer;
  /** Actor for events when there is no session (e.g. a subscription acting for a user). */
  actorId?: string | null;
  /** Refuses any publish outside the route's declared events (a programming error: 500 INTERNAL). */
  publishes?: PublishAllowList;
  /** The request behind the work (its X-Request-Id), recorded with every event it publishes; default: the one in scope (observability/request-id.ts). */
  requestId?: string | null;
}

interface EnterRow {
  session: { id: string; user_id: string; last_seen_at: string; permissions: string[] } | null;
}

// The module tables read here (sessions, users, roles) are declared, column by column, in
// access/identity-tables.ts and checked against the database at boot.
// One round trip opens the tenant scope and resolves the caller: tenant first, then the
// restricted role, then the caller's permissions, which it also leaves in `app.permissions` for
// this transaction (comma-separated, empty without a session) so that a statement sent in the same
// write can refuse an unauthorised caller itself (see `permissionPredicate`), and the user's id in
// `app.actor_id` (the actor of the events such a write publishes). The columns are
// evaluated left to right and the session subquery only when its column is, after the role switch.
// Permissions are not de-duplicated here (a sort per request): the Set does it. The session
// subquery filters by tenant explicitly, so it is correct whether the planner evaluates it before
// or after the role switch. The tenant parameter is typed uuid (`$1::uuid::text`): as text, the
// generic plan compared every row a small table's sequential scan reads with `$1::uuid`, parsing
// the uuid again per row (users: 0.09 ms of the statement's 0.15 ms at a hundred users).
export const ENTER_WITH_SESSION = prepared(`
select set_config('app.tenant_id', $1::uuid::text, true) as t,
       set_config('role', '${APP_ROLE}', true) as r,
       set_config('${PERMISSIONS_SETTING}', '', true) as p,
       set_config('${ACTOR_SETTING}', '', true) as a,
       (select json_build_object(
                 'id', s.id, 'user_id', s.user_id, 'last_seen_at', s.last_seen_at,
                 'permissions', g.permissions,
                 'granted', set_config('${PERMISSIONS_SETTING}', array_to_string(g.permissions, ','), true),
                 'actor', set_config('${ACTOR_SETTING}', s.user_id::text, true))
          from sessions s
          join users u on u.tenant_id = s.tenant_id and u.id = s.user_id
          cross join lateral (select coalesce(array_agg(p), '{}') as permissions
                                from roles r cross join lateral unnest(r.permissions) p
                               where r.tenant_id = s.tenant_id and r.name = any (u.roles)) g
         where s.tenant_id = $1 and s.id_hash = $2 and s.expires_at > $3
           and u.status = 'active' and u.deleted_at is null) as session`);

export const ENTER = prepared(
  `select set_config('app.tenant_id', $1, true) as t, set_config('role', '${APP_ROLE}', true) as r,
          set_config('${PERMISSIONS_SETTING}', '', true) as p, set_config('${ACTOR_SETTING}', '', true) as a`,
);

const TOUCH_INTERVAL_MS = 5 * 60_000;
const TOUCH_SESSION = prepared(`
update sessions
   set last_seen_at = $2,
       expires_at = least($2::timestamptz + interval '30 days', created_at + interval '90 days')
 where id = $1
returning floor(extract(epoch from expires_at - $2::timestamptz))::int as seconds_left`);

/** The request id of each transaction run() opened for a request: its events record it. */
const requestIdOf = new WeakMap<Transaction<Database>, string>();

/** Transactions that wrote outbox rows, so their commit can wake the relay. */
const wroteOutbox = new WeakSet<Transaction<Database>>();

interface Hooks {
  rollback: AfterTransaction[];
  commit: AfterTransaction[];
}

/** The hooks of each transaction run() opened: every context over that transaction shares them. */
const hooksOf = new WeakMap<Transaction<Database>, Hooks>();

const hooksFor = (trx: Transaction<Database>): Hooks => {
  const hooks = hooksOf.get(trx);
  if (!hooks) throw new Error('onRollback and afterCommit need a transaction opened by TenantTransactions.run');
  return hooks;
};

async function runHooks(fns: AfterTransaction[]): Promise<void> {
  for (const fn of fns) await fn();
}

/** Opens tenant-scoped transactions. The only place that sets the tenant and the role. */
export class TenantTransactions {
  private readonly db: Db;
  private readonly declaredEvents: ReadonlySet<string>;
  private readonly outbox: OutboxSignal | undefined;
  private readonly clock: Clock;

  constructor(db: Db, declaredEvents: ReadonlySet<string>, outbox?: OutboxSignal, clock: Clock = systemClock) {
    this.db = db;
    this.declaredEvents = declaredEvents;
    this.outbox = outbox;
    this.clock = clock;
  }

  /**
   * Runs fn in a transaction of the tenant. The transaction's connection is taken before fn's
   * async context is marked as a transaction body, in which the pool then refuses any checkout.
   */
  async run<T>(tenant: TenantRef, fn: (ctx: TxContext) => Promise<T>, options: TxOptions = {}): Promise<T> {
    let published = false;
    const hooks: Hooks = { rollback: [], commit: [] };
    let result: T;
    try {
      result = await this.db.kysely.transaction().execute((trx) =>
        asTransactionBody(async () => {
          hooksOf.set(trx, hooks);
          const requestId = options.requestId ?? currentRequestId();
          if (requestId) requestIdOf.set(trx, requestId);
          const now = this.clock.now();
          const session = await this.enter(trx, tenant, options.sessionHash, now);
          const { ctx, flush } = scopedContext(trx, tenant, session, session?.userId ?? options.actorId ?? null, this.declaredEvents, now, options.publishes);
          const value = await fn(ctx);
          await flush();
          published = wroteOutbox.has(trx);
          return value;
        }),
      );
    } catch (err) {
      await runHooks(hooks.rollback);
      throw err;
    }
    if (published) this.outbox?.committed();
    await runHooks(hooks.commit);
    return result;
  }

  /**
   * Runs one statement in a transaction of the tenant in a single exchange with PostgreSQL: BEGIN,
   * the opening statement, the statement, the outbox insert of its events (if any) and COMMIT
   * leave in one write and come back in one read. The events are checked as publish() checks them
   * and inserted only for a caller holding `work.permission`, with the caller as their actor.
   * The statement cannot wait for the caller to be known, so it must check the permission itself
   * (`permissionPredicate`): for a caller without it, it finds nothing and does no work. The caller
   * is then decided from the opening statement's answer, as in run(). A session due for its touch
   * is touched afterwards, in an exchange of its own. The statement's answer (rows or error) is
   * returned beside the caller, for the guard to judge first.
   */
  async runStatement(tenant: TenantRef, work: OneStatement, options: TxOptions = {}): Promise<{ session: SessionInfo | null; answer: Answer }> {
    const now = this.clock.now();
    const opening: Statement = options.sessionHash ? { text: ENTER_WITH_SESSION, values: [tenant.id, options.sessionHash, now] } : { text: ENTER, values: [tenant.id] };
    const events = work.events ?? [];
    for (const event of events) checkEvent(this.declaredEvents, options.publishes, event);
    const outbox: Statement[] = events.length > 0 ? [outboxInsertFor(work.permission, events, now, options.requestId ?? currentRequestId() ?? null)] : [];
    const statements = [opening, work.statement, ...outbox];
    const [entered, answer, published] = await traceExchange(statements, () => exchange(this.db.pool, statements));
    if (!entered!.ok) throw entered!.error;
    const session = sessionFrom(entered!.result.rows[0] as EnterRow | undefined);
    // The caller held the permission and the transaction committed: the relay has work.
    if (published?.ok && (published.result.rowCount ?? 0) > 0 && answer!.ok) this.outbox?.committed();
    if (session && needsTouch(session, now)) {
      const [, touched] = await exchange(this.db.pool, [{ text: ENTER, values: [tenant.id] }, { text: TOUCH_SESSION, values: [session.id, now] }]);
      if (!touched!.ok) throw touched!.error;
      session.renewedForSeconds = (touched!.result.rows[0] as { seconds_left: number } | undefined)?.seconds_left;
    }
    return { session, answer: answer! };
  }

  private async enter(trx: Transaction<Database>, tenant: TenantRef, sessionHash: Buffer | undefined, now: Date): Promise<SessionInfo | null> {
    if (!sessionHash) {
      await trx.executeQuery(CompiledQuery.raw(ENTER, [tenant.id]));
      return null;
    }
    const result = await trx.executeQuery<EnterRow>(CompiledQuery.raw(ENTER_WITH_SESSION, [tenant.id, sessionHash, now]));
    const session = sessionFrom(result.rows[0]);
    if (session && needsTouch(session, now)) {
      const touched = await trx.executeQuery<{ seconds_left: number }>(CompiledQuery.raw(TOUCH_SESSION, [session.id, now]));
      session.renewedForSeconds = touched.rows[0]?.seconds_left;
    }
    return session;
  }
}

function sessionFrom(row: EnterRow | undefined): SessionInfo | null {
  const found = row?.session;
  if (!found) return null;
  return { id: found.id, userId: found.user_id, permissions: new Set(found.permissions), lastSeenAt: new Date(found.last_seen_at) };
}

/** A session is touched (its expiry slid forward) at most once every TOUCH_INTERVAL_MS. */
const needsTouch = (session: SessionInfo, now: Date): boolean => now.getTime() - session.lastSeenAt.getTime() > TOUCH_INTERVAL_MS;

/**
 * A context over an open transaction. Events are buffered and written to the outbox by flush(),
 * which the owner of the scope calls while the transaction is still scoped to that tenant.
 */
export function scopedContext(
  trx: Transaction<Database>,
  tenant: TenantRef,
  session: SessionInfo | null,
  actorId: string | null,
  declaredEvents: ReadonlySet<string>,
  now: Date,
  allowed?: PublishAllowList,
): { ctx: TxContext; flush(): Promise<void> } {
  const events: PendingEvent[] = [];
  const ctx: TxContext = {
    tenant,
    db: trx,
    session,
    actorId,
    declaredEvents,
    now,
    publish: (name, payload = {}) => {
      const event = { name, payload };
      checkEvent(declaredEvents, allowed, event);
      events.push(event);
    },
    can: (permission) => hasPermission(session, permission),
    onRollback: (fn) => void hooksFor(trx).rollback.push(fn),
    afterCommit: (fn) => void hooksFor(trx).commit.push(fn),
  };
  return {
    ctx,
    flush: async () => {
      if (events.length > 0) await insertOutbox(trx, events.splice(0), actorId, now);
    },
  };
}

/** What publish() refuses: an undeclared event, one outside the route's list, an unsafe payload. */
function checkEvent(declaredEvents: ReadonlySet<string>, allowed: PublishAllowList | undefined, { name, payload }: PendingEvent): void {
  if (!declaredEvents.has(name)) throw problem('INTERNAL', `event ${name} is not declared by any module`);
  if (allowed && !allowed.events.has(name)) {
    throw problem('INTERNAL', `event ${name} is not in the publishes list of ${allowed.by} (${[...allowed.events].join(', ') || 'none'})`);
  }
  assertSafePayload(name, payload);
}

export function hasPermission(session: SessionInfo | null, permission: string): boolean {
  if (!session) return false;
  return session.permissions.has('*') || session.permissions.has(permission);
}

// One text for any number of events, in publication order (outbox ids follow it). Deferred: the
// insert is the transaction's last statement and travels with its COMMIT. The event ids are made
// here (UUIDv7, eventIds): time-ordered, the audit trail's key takes them as appends, and
// PostgreSQL makes no random uuid per event (gen_random_uuid, the column's default, cost more
// than a tenth of the insert).
const INSERT_OUTBOX = deferred(`
insert into outbox (event_id, name, payload, actor_id, tenant_id, request_id, traceparent)
select e.event_id, e.name, e.payload, $4::uuid, app_tenant_id(), $5::text, $6::text
  from unnest($1::uuid[], $2::text[], $3::jsonb[]) with ordinality as e(event_id, name, payload, n) order by e.n`);

/** The outbox insert of a one-exchange write: only for a caller holding the permission, who is the actor. */
const guardedOutboxInserts = new Map<string, string>();
function outboxInsertFor(permission: string, events: PendingEvent[], now: Date, requestId: string | null): Statement {
  let text = guardedOutboxInserts.get(permission);
  if (!text) {
    text = prepared(`
insert into outbox (event_id, name, payload, actor_id, tenant_id, request_id, traceparent)
select e.event_id, e.name, e.payload, nullif(current_setting('${ACTOR_SETTING}', true), '')::uuid, app_tenant_id(), $4::text, $5::text
  from unnest($1::uuid[], $2::text[], $3::jsonb[]) with ordinality as e(event_id, name, payload, n)
 where ${permissionPredicate(permission)}
 order by e.n`);
    guardedOutboxInserts.set(permission, text);
  }
  return { text, values: [...outboxColumns(events, now), requestId, currentTraceparent()] };
}

/** The ids, names and payloads of events, as the outbox inserts' first three parameters. */
function outboxColumns(events: PendingEvent[], now: Date): [string[], string[], string[]] {
  return [eventIds(events.length, now), events.map((e) => e.name), events.map((e) => JSON.stringify(e.payload))];
}

function eventIds(count: number, now: Date): string[] {
  const ms = now.getTime();
  return Array.from({ length: count }, () => uuidv7(ms));
}

export async function insertOutbox(trx: Transaction<Database>, events: PendingEvent[], actorId: string | null, now: Date): Promise<void> {
  wroteOutbox.add(trx);
  // The request id and the trace context of the span writing the events (null while tracing is off).
  await trx.executeQuery(CompiledQuery.raw(INSERT_OUTBOX, [...outboxColumns(events, now), actorId, requestIdOf.get(trx) ?? null, currentTraceparent()]));
}
