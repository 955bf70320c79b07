import { CompiledQuery, type Transaction } from 'kysely';
import { asTransactionBody, type Db } from '../db/pool.ts';
import { deferred, exchange, prepared, type Answer, type Statement } from '../db/statements.ts';
import type { Database } from '../db/types.ts';
import { uuidv7 } from '../db/uuidv7.ts';
import type { TenantRef } from '../contracts/tenant.ts';
import type {
  AfterTransaction,
  OneStatement,
  PendingEvent,
  PublishAllowList,
  SessionInfo,
  Transactions,
  TxContext,
  TxOptions,
} from '../contracts/transaction.ts';
import { assertSafePayload } from '../events/payload-policy.ts';
import type { OutboxSignal } from '../events/outbox-signal.ts';
import { ProgrammingError } from '../errors.ts';
import { payloadMismatch } from '../events/payload-schemas.ts';
import { systemClock, type Clock } from '../clock.ts';
import { currentTraceparent, traceExchange } from '../observability/tracing.ts';
import { currentRequestId } from '../observability/request-id.ts';
import type { ListCursors } from '../contracts/cursor.ts';
import { actorOf, type Actor } from './actor.ts';
import { flushRevisions } from '../history/revisions.ts';
import { EVERYTHING, type EntitlementDefaults } from '../entitlements/resolve.ts';
import { attachPlanLimits, type PlanLimits } from '../entitlements/limits.ts';

import {
  ACTOR_SETTING,
  TOUCH_SESSION,
  TOUCH_TOKEN,
  needsTouch,
  openingStatements,
  permissionPredicate,
  sessionFrom,
  type EnterRow,
  type OpeningStatements,
} from './opening.ts';

export {
  APP_ROLE,
  ACTOR_SETTING,
  ENTER,
  ENTER_WITH_SESSION,
  PERMISSIONS_SETTING,
  permissionPredicate,
} from './opening.ts';

export type {
  AfterTransaction,
  OneStatement,
  PendingEvent,
  PublishAllowList,
  SessionInfo,
  Transactions,
  TxContext,
  TxOptions,
} from '../contracts/transaction.ts';

/** The request id of each transaction run() opened for a request: its events record it. */
const requestIdOf = new WeakMap<Transaction<Database>, string>();

/** The events each context has published and not yet written (scopedContext's buffer). */
const pendingOf = new WeakMap<TxContext, PendingEvent[]>();

/** How many events the context has published so far: where a command's own events begin. */
export function publishedCount(ctx: TxContext): number {
  return pendingOf.get(ctx)?.length ?? 0;
}

/**
 * Names the row a command changed on the last event it published (those after `since`), so that
 * the entity's streams learn of the change from the outbox; false when it published none there
 * (or the context is not a scoped one), for the caller to publish the entity's updated event.
 */
export function carryChange(ctx: TxContext, since: number, subject: { entity: string; id: string }): boolean {
  const pending = pendingOf.get(ctx);
  if (!pending || pending.length <= since) return false;
  pending[pending.length - 1]!.subject = subject;
  return true;
}

/**
 * A context over the same transaction with some of its parts replaced (a batch request's publish,
 * held to its route's list): its events still go to the parent's buffer, so a command in it finds
 * its own events there (carryChange) as it would in the parent.
 */
export function derivedContext(parent: TxContext, parts: Partial<TxContext>): TxContext {
  const ctx: TxContext = { ...parent, ...parts };
  const pending = pendingOf.get(parent);
  if (pending) pendingOf.set(ctx, pending);
  return ctx;
}

/** Transactions that wrote outbox rows, so their commit can wake the relay. */
const wroteOutbox = new WeakSet<Transaction<Database>>();

/** The installation's cursor seal, by each transaction run() opened: its lists seal their cursors with it. */
const cursorsByTransaction = new WeakMap<Transaction<Database>, ListCursors>();

/**
 * The cursor seal of the installation whose TenantTransactions opened this transaction: what a
 * list in it signs its `next` with and checks its `after` against (operations/paging.ts).
 */
export function cursorsOf(ctx: Pick<TxContext, 'db'>): ListCursors {
  const cursors = cursorsByTransaction.get(ctx.db);
  if (!cursors) throw new Error('a list needs a transaction opened by TenantTransactions.run with the cursor seal');
  return cursors;
}

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
export class TenantTransactions implements Transactions {
  private readonly db: Db;
  private readonly declaredEvents: ReadonlySet<string>;
  private readonly outbox: OutboxSignal | undefined;
  private readonly clock: Clock;
  /** The opening statements, each setting the transaction's statement_timeout (opening.ts). */
  private readonly opening: OpeningStatements;
  /** The installation's cursor seal (operations/cursor.ts), handed to each transaction's lists. */
  private readonly cursors: ListCursors | undefined;
  /**
   * Transactions on the read replica (context/replica-reads.ts): read-only, so a session's or token's use is
   * not recorded (the next request the primary serves records it), and each context says so.
   */
  private readonly replica: boolean;
  /** billing.default_entitlements: what a tenant gets without a plan (framework/entitlements/resolve.ts). */
  private readonly defaults: EntitlementDefaults;
  /** The installation's plan limits (framework/entitlements/limits.ts), handed to each transaction's writes. */
  private readonly planLimits: PlanLimits | undefined;

  constructor(
    db: Db,
    declaredEvents: ReadonlySet<string>,
    outbox?: OutboxSignal,
    clock: Clock = systemClock,
    cursors?: ListCursors,
    options: {
      replica?: boolean;
      entitlementDefaults?: EntitlementDefaults;
      planLimits?: PlanLimits;
      /** The plan source of the entitlements (ModuleDefinition.planEntitlementsSql), read by the opening statement. */
      planEntitlementsSql?: (tenant: string) => string;
    } = {},
  ) {
    this.db = db;
    this.replica = options.replica === true;
    this.defaults = options.entitlementDefaults ?? EVERYTHING;
    this.planLimits = options.planLimits;
    this.opening = openingStatements(db.statementTimeoutMs, options.planEntitlementsSql);
    this.declaredEvents = declaredEvents;
    this.outbox = outbox;
    this.clock = clock;
    this.cursors = cursors;
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
          if (this.cursors) cursorsByTransaction.set(trx, this.cursors);
          if (this.planLimits) attachPlanLimits(trx, this.planLimits);
          const requestId = options.requestId ?? currentRequestId();
          if (requestId) requestIdOf.set(trx, requestId);
          const now = this.clock.now();
          const session = options.tokenHash
            ? await this.enterWithToken(trx, tenant, options.tokenHash, now)
            : await this.enter(trx, tenant, options.sessionHash, now);
          const actorId = session?.userId ?? options.actorId ?? null;
          const { ctx, flush } = scopedContext(
            trx,
            tenant,
            session,
            actorId,
            this.declaredEvents,
            now,
            options.publishes,
            actorOf(session, actorId, options.acting),
          );
          const value = await fn(this.replica ? { ...ctx, replica: true } : ctx);
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
   * leave in one write and come back in one read. The statement is sent before the caller is
   * known, so the framework's opening statement carries the guard (opening.ts, ENTER_*_GUARDED):
   * for a caller without `work.permission` the transaction turns read-only, the statement
   * and the outbox insert cannot write, and nothing commits, whichever builder made the statement.
   * The events are checked as publish() checks them, with the caller as their actor. The caller
   * is then decided from the opening statement's answer, as in run(), by the route's guard, which
   * judges the caller before it reads the statement's answer. A session due for its touch is
   * touched afterwards, in an exchange of its own.
   */
  async runStatement(
    tenant: TenantRef,
    work: OneStatement,
    options: TxOptions = {},
  ): Promise<{ session: SessionInfo | null; answer: Answer }> {
    if (options.tokenHash)
      throw new Error('runStatement resolves session cookies only: a bearer request runs through run()');
    const now = this.clock.now();
    // The opening statement carries the guard (opening.ts): for a caller without the permission the transaction turns read-only.
    const opening: Statement = options.sessionHash
      ? { text: this.opening.enterWithSessionGuarded, values: [tenant.id, options.sessionHash, now, work.permission] }
      : { text: this.opening.enterGuarded, values: [tenant.id, work.permission] };
    const events = work.events ?? [];
    for (const event of events) checkEvent(this.declaredEvents, options.publishes, event);
    const outbox: Statement[] =
      events.length > 0
        ? [outboxInsertFor(work.permission, events, now, options.requestId ?? currentRequestId() ?? null)]
        : [];
    const statements = [opening, work.statement, ...outbox];
    const [entered, answer, published] = await traceExchange(statements, () => exchange(this.db.pool, statements));
    if (!entered!.ok) throw entered!.error;
    const session = sessionFrom(entered!.result.rows[0] as EnterRow | undefined, this.defaults);
    // The caller held the permission and the transaction committed: the relay has work.
    if (published?.ok && (published.result.rowCount ?? 0) > 0 && answer!.ok) this.outbox?.committed();
    if (session && !this.replica && needsTouch(session, now)) {
      const [, touched] = await exchange(this.db.pool, [
        { text: this.opening.enter, values: [tenant.id] },
        { text: TOUCH_SESSION, values: [session.id, now] },
      ]);
      if (!touched!.ok) throw touched!.error;
      session.renewedForSeconds = (touched!.result.rows[0] as { seconds_left: number } | undefined)?.seconds_left;
    }
    return { session, answer: answer! };
  }

  /** Opens the tenant scope with the caller of a personal access token; records its use at most once a minute. */
  private async enterWithToken(
    trx: Transaction<Database>,
    tenant: TenantRef,
    tokenHash: Buffer,
    now: Date,
  ): Promise<SessionInfo | null> {
    const result = await trx.executeQuery<EnterRow>(
      CompiledQuery.raw(this.opening.enterWithToken, [tenant.id, tokenHash, now]),
    );
    const session = sessionFrom(result.rows[0], this.defaults);
    if (session && !this.replica && needsTouch(session, now))
      await trx.executeQuery(CompiledQuery.raw(TOUCH_TOKEN, [session.id, now]));
    return session;
  }

  private async enter(
    trx: Transaction<Database>,
    tenant: TenantRef,
    sessionHash: Buffer | undefined,
    now: Date,
  ): Promise<SessionInfo | null> {
    if (!sessionHash) {
      await trx.executeQuery(CompiledQuery.raw(this.opening.enter, [tenant.id]));
      return null;
    }
    const result = await trx.executeQuery<EnterRow>(
      CompiledQuery.raw(this.opening.enterWithSession, [tenant.id, sessionHash, now]),
    );
    const session = sessionFrom(result.rows[0], this.defaults);
    if (session && !this.replica && needsTouch(session, now)) {
      const touched = await trx.executeQuery<{ seconds_left: number }>(
        CompiledQuery.raw(TOUCH_SESSION, [session.id, now]),
      );
      session.renewedForSeconds = touched.rows[0]?.seconds_left;
    }
    return session;
  }
}

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
  actor: Actor = actorOf(session, actorId, undefined),
): { ctx: TxContext; flush(): Promise<void> } {
  const events: PendingEvent[] = [];
  const ctx: TxContext = {
    tenant,
    db: trx,
    session,
    actorId,
    actor,
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
  pendingOf.set(ctx, events);
  return {
    ctx,
    // The revisions first, then the events: both held back to leave with the COMMIT.
    flush: async () => {
      await flushRevisions(trx, tenant.id);
      if (events.length > 0) await insertOutbox(trx, events.splice(0), actor, now);
    },
  };
}

/** What publish() refuses: an undeclared event, one outside the route's list, an unsafe payload. */
function checkEvent(
  declaredEvents: ReadonlySet<string>,
  allowed: PublishAllowList | undefined,
  { name, payload }: PendingEvent,
): void {
  // The code's mistake: 500 INTERNAL for the client, the whole sentence in the log (ProgrammingError).
  if (!declaredEvents.has(name)) throw new ProgrammingError(`event ${name} is not declared by any module`);
  if (allowed && !allowed.events.has(name)) {
    throw new ProgrammingError(
      `event ${name} is not in the publishes list of ${allowed.by} (${[...allowed.events].join(', ') || 'none'})`,
    );
  }
  assertSafePayload(name, payload);
  const mismatch = payloadMismatch(name, payload);
  if (mismatch)
    throw new ProgrammingError(`the payload of event ${name} does not match its declared schema: ${mismatch}`);
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
// A command's change travels with one of its events: subject_entity and subject_id ($9, $10), null on the others.
const INSERT_OUTBOX = deferred(`
insert into outbox (event_id, name, payload, actor_id, tenant_id, request_id, traceparent, actor_kind, actor_name, subject_entity, subject_id)
select e.event_id, e.name, e.payload, $4::uuid, app_tenant_id(), $5::text, $6::text, $7::text, $8::text, e.subject_entity, e.subject_id
  from unnest($1::uuid[], $2::text[], $3::jsonb[], $9::text[], $10::uuid[]) with ordinality
       as e(event_id, name, payload, subject_entity, subject_id, n) order by e.n`);

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

export async function insertOutbox(
  trx: Transaction<Database>,
  events: PendingEvent[],
  actor: Actor,
  now: Date,
): Promise<void> {
  wroteOutbox.add(trx);
  // The request id and the trace context of the span writing the events (null while tracing is off).
  // The actor's kind only where the id alone does not say it (a token, a job, the operator...).
  const plain = actor.kind === 'user' || actor.kind === 'system';
  await trx.executeQuery(
    CompiledQuery.raw(INSERT_OUTBOX, [
      ...outboxColumns(events, now),
      actor.userId,
      requestIdOf.get(trx) ?? null,
      currentTraceparent(),
      plain ? null : actor.kind,
      actor.name,
      events.map((e) => e.subject?.entity ?? null),
      events.map((e) => e.subject?.id ?? null),
    ]),
  );
}
