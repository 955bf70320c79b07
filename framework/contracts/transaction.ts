import type { ActingAs, Actor } from './actor.ts';
import type { Transaction } from 'kysely';
import type { Database, PipelineAnswer, Statement } from './database.ts';
import type { TenantRef } from './tenant.ts';

/** A tenant's entitlements as resolved for one transaction. */
export interface Entitlements {
  /** The features granted; '*' stands for every declared feature. */
  readonly features: ReadonlySet<string>;
  /** Each bounded limit's value; a limit not named here has no bound. */
  readonly limits: Readonly<Record<string, number>>;
}

export interface SessionInfo {
  id: string;
  userId: string;
  permissions: ReadonlySet<string>;
  lastSeenAt: Date;
  /** Set when this request slid the expiry forward: seconds the session now has left, for the cookie's Max-Age. */
  renewedForSeconds?: number;
  /**
   * 'token': the caller came with a personal access token (Authorization: Bearer), not a session
   * cookie; `id` is then the token's id, `permissions` the token's intersected with the user's.
   */
  via?: 'token';
  /** The token's name, when the caller came with one: history names it beside the person. */
  tokenName?: string;
  /**
   * The tenant's features and limits, resolved by the same opening statement as the permissions
   * (framework/entitlements/): the guard refuses a route whose feature is not granted.
   */
  entitlements?: Entitlements;
}

export interface PendingEvent {
  name: string;
  payload: Record<string, unknown>;
  /**
   * The row a command changed, when this event is the one that carries the change to streams
   * (framework/live): a command publishes its own events, not the entity's updated event.
   */
  subject?: { entity: string; id: string };
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
  /** Who acts, as history and the tenant's activity record it (context/actor.ts). */
  readonly actor: Actor;
  readonly declaredEvents: ReadonlySet<string>;
  /** The time of this transaction, read once from the clock when it opened: compare with this, not now(). */
  readonly now: Date;
  /**
   * Set when the transaction runs on the read replica (database.replica_url, for a route that may
   * read from it): what it reads may be seconds behind, and it can write nothing.
   */
  readonly replica?: true;
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
  /** The permission the caller must hold: without it the guard leaves the transaction read-only. */
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
  /**
   * SHA-256 of a personal access token (Authorization: Bearer): resolves the caller from the token
   * instead (context/opening.ts, enterWithTokenText). Not with sessionHash; run() only, never runStatement.
   */
  tokenHash?: Buffer;
  /** Actor for events when there is no session (e.g. a subscription acting for a user). */
  actorId?: string | null;
  /** What the transaction is opened for, when no session says who acts: a job's run, a subscription's delivery. */
  acting?: ActingAs;
  /** Refuses any publish outside the route's declared events (a programming error: 500 INTERNAL). */
  publishes?: PublishAllowList;
  /** The request behind the work (its X-Request-Id), recorded with every event it publishes; default: the one in scope (observability/request-id.ts). */
  requestId?: string | null;
}

/**
 * Opens tenant-scoped transactions (framework/context/tx.ts, TenantTransactions): the only way
 * code reaches a tenant's rows.
 */
export interface Transactions {
  /** Runs fn in a transaction of the tenant, commits when it resolves, rolls back when it throws. */
  run<T>(tenant: TenantRef, fn: (ctx: TxContext) => Promise<T>, options?: TxOptions): Promise<T>;
  /** One statement in a transaction of the tenant in a single exchange with PostgreSQL (the one-exchange path). */
  runStatement(
    tenant: TenantRef,
    work: OneStatement,
    options?: TxOptions,
  ): Promise<{ session: SessionInfo | null; answer: PipelineAnswer }>;
}
