import type { FeatureDeclaration, LimitDeclaration } from './entitlements.ts';
import type { TSchema } from 'typebox';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import type { Counter, Gauge, Histogram, Registry as MetricRegistry } from 'prom-client';
import type { PasswordHasher, PasswordVerifier, SignedLinks } from './access.ts';
import type { Clock } from './clock.ts';
import type { Config } from './config.ts';
import type { ListCursors } from './cursor.ts';
import type { Db } from './database.ts';
import type { Mailer } from './mail.ts';
import type { TenantRef } from './tenant.ts';
import type { Transactions, TxContext } from './transaction.ts';

/**
 * Shared process-wide services handed to handlers, commands, subscriptions and jobs. What the
 * registry and the composition add (the declarations, the routes, the jobs, each entity's
 * operations) is declared in contracts/composition.ts, which knows the definitions, by
 * declaration merging: this file stays below the definitions, which receive Services.
 */
export interface Services {
  config: Config;
  db: Db;
  transactions: Transactions;
  hosts: HostDirectory;
  /** Current ETags of publicly readable rows, evicted on every write (framework/context/public-read-cache.ts). */
  publicReads: PublicReadValidators;
  /** What the modules declared, resolved once at boot (framework/entity/registry.ts). */
  registry: ModuleRegistry;
  mailer: Mailer;
  log: FastifyBaseLogger;
  /** The time every business decision compares with (see framework/clock.ts). */
  clock: Clock;
  /** Checks a password against its stored argon2 hash (see framework/access/password-verifier.ts). */
  passwordVerifier: PasswordVerifier;
  /** Hashes a password for storing, with no transaction open (see framework/access/password-verifier.ts). */
  passwordHasher: PasswordHasher;
  /** Signs list cursors and checks them, with a key from the installation's secret (operations/cursor.ts). */
  cursors: ListCursors;
  /** The open streams of live changes (framework/live/hub.ts): served by a web process once started. */
  live: LiveStreams;
  /** Signs links that open without a session until they expire (an export's archive), with a key from the installation's secret. */
  links: SignedLinks;
  /**
   * The key of the digest an Idempotency-Key keeps of its request (framework/http/idempotency.ts),
   * from the installation's secret: the digest of a body holding a password is no way to guess it.
   */
  requestDigestKey: Buffer;
  /**
   * The read replica (database.replica_url), in a process that serves HTTP: the transactions of
   * routes that may read from it (RouteDefinition.replica). Absent: every read is the primary's.
   */
  replica?: ReplicaReader;
  /** The Prometheus series, when metrics.port is set (framework/observability/metrics.ts); absent, nothing is counted. */
  metrics?: MetricSeries;
}

/**
 * A web process's open streams of live changes (framework/live/hub.ts; docs/api-conventions.md,
 * "Live changes"): what a list's stream route and the relay ask of them.
 */
export interface LiveStreams {
  /**
   * Opens a stream of the list (its key: an entity's, or a declared list's operation id) for the
   * caller of the route's transaction, with the list's filters and fields its query string asks
   * (422 or 403 for what the list refuses), and answers what fastify sends: 429 past the limits.
   */
  open(
    tx: TxContext,
    list: string,
    request: FastifyRequest,
    reply: FastifyReply,
    query?: Readonly<Record<string, unknown>>,
  ): Promise<Readable>;
  /**
   * Opens one connection that carries several lists, named by their streams' operation ids (the
   * admin shell's one stream per browser), for a caller the route admitted to each of them: a
   * list's events are `<operation id>:<event>`; the connection counts once against the limits and
   * opens with its start position as an `id:`. The lists in `fresh` start now, whatever the
   * Last-Event-ID.
   */
  follow(
    tx: TxContext,
    operationIds: readonly string[],
    request: FastifyRequest,
    reply: FastifyReply,
    fresh?: ReadonlySet<string>,
  ): Promise<Readable>;
  /** The operation ids of the lists that can be followed: their streams' routes. */
  readonly operations: ReadonlySet<string>;
  /** Connections open in this process (one per stream answer, whatever number of lists it carries). */
  readonly openStreams: number;
  /** The events some stream shows, by name: the relay gives them live positions. */
  readonly events: ReadonlySet<string>;
  /** Ends every open stream cleanly (shutdown): clients reconnect, elsewhere, from their last event id. */
  close(): Promise<void>;
}

/** Where a request that may read from the replica runs its transactions (framework/context/replica-reads.ts). */
export interface ReplicaReader {
  /**
   * The replica's transactions while its lag is within database.replica_max_lag_ms (replica: true),
   * the primary's otherwise. onFallback: told when the primary served such a request after all (a
   * caller the replica did not know yet).
   */
  forRead(onFallback?: () => void): { transactions: Transactions; replica: boolean };
}

/** A permission as a module declares it (ModuleDefinition.permissions). */
export interface PermissionDeclaration {
  name: string;
  description: string;
  /** Operator permissions are refused at every tenant but the operator's, and no customer role may hold them. */
  operator?: boolean;
}

/**
 * What the modules declared, resolved once and frozen (framework/entity/registry.ts). The members
 * that are definitions (modules, entities, subscriptions, queues) are added in
 * contracts/composition.ts.
 */
export interface ModuleRegistry {
  readonly permissions: ReadonlyMap<string, PermissionDeclaration & { module: string }>;
  /** Every declared event, the entities' lifecycle events included. */
  readonly events: ReadonlySet<string>;
  /** Each module's own events, derived from its publishes lists and declared once. */
  readonly eventsByModule: ReadonlyMap<string, readonly string[]>;
  /** The events' declared payload schemas (ModuleDefinition.eventPayloads). */
  readonly eventPayloads: ReadonlyMap<string, TSchema>;
  isOperatorPermission(name: string): boolean;
  /** The declared features and limits (ModuleDefinition.features, .limits), by name. */
  readonly features: ReadonlyMap<string, FeatureDeclaration & { module: string }>;
  readonly limits: ReadonlyMap<string, LimitDeclaration & { module: string }>;
  /** The plan source of the entitlements (ModuleDefinition.planEntitlementsSql), if a module keeps plans. */
  readonly planEntitlementsSql: ((tenant: string) => string) | undefined;
}

/** Host → tenant, cached per process and evicted on every host or status change (framework/context/host-cache.ts). */
export interface HostDirectory {
  /** The cached tenant of a served host, without waiting: undefined when resolve() must ask. */
  cached(host: string): TenantRef | undefined;
  /** The tenant a host serves, or undefined for a host no active tenant has. */
  resolve(host: string): Promise<TenantRef | undefined>;
  evictTenant(tenantId: string): void;
  cachedHosts(): string[];
  readonly size: number;
}

/** The public reads' current ETags (framework/context/public-read-cache.ts). */
export interface PublicReadValidators {
  /** The generation to hand back to `fill`: read it before the lookup starts. */
  current(): number;
  etag(table: string, tenantId: string, value: string, now?: number): string | undefined;
  fill(table: string, tenantId: string, value: string, etag: string, generation: number, now?: number): void;
  /** Drops the tenant's entries of the table: a row of it was written. */
  evict(table: string, tenantId: string): void;
  clear(): void;
}

/** A queue's figures as pg-boss's getQueues answers them (the fields read). */
export interface QueueFigures {
  name: string;
  queuedCount: number;
  failedCount: number;
}

/** The process's Prometheus series (framework/observability/metrics.ts; docs/observability.md). */
export interface MetricSeries {
  readonly registry: MetricRegistry;
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
  /** The worker's pg-boss queues, read at scrape time. */
  watchQueues(read: () => Promise<QueueFigures[]>): void;
  /** One HTTP answer. */
  observeRequest(operation: string, method: string, status: number, seconds: number): void;
  /** One job run, done or failed. */
  observeJob(job: string, ok: boolean, seconds: number, endedAt: Date): void;
  /** The text exposition of every series. */
  exposition(): Promise<{ contentType: string; body: string }>;
}
