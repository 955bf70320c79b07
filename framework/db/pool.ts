import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';
import { Kysely } from 'kysely';
import type { Database } from './types.ts';
import { PipelinedDialect } from './kysely-driver.ts';
import { GatheringClient, UnnamedStatementsClient } from './gathering-client.ts';
import { problem } from '../errors.ts';
import { kyselyQuerySpans } from '../observability/tracing.ts';
import type { Db } from '../contracts/database.ts';

export type { Db } from '../contracts/database.ts';

// bigint counts (count(*)) arrive as strings by default; our counts fit in a JS number.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

/** How long an exhausted pool asks a caller to wait before retrying (Retry-After of DB_BUSY). */
export const DB_BUSY_RETRY_AFTER_SECONDS = 1;

/**
 * Marks the async context of a transaction's body. Code running there holds a connection
 * already; a second one from the same pool can deadlock the process (with every connection held by
 * a transaction waiting for another, none is ever released), so the pool refuses it outright.
 */
const insideTransaction = new AsyncLocalStorage<true>();

/** Runs fn as the body of a transaction: nothing it calls may check a connection out of the pool. */
export function asTransactionBody<T>(fn: () => T): T {
  return insideTransaction.run(true, fn);
}

/**
 * Whether the calling code runs as the body of a transaction, holding a pool connection: what a
 * step that must hold none while it works (hashing a password) can be checked against.
 */
export function insideTransactionBody(): boolean {
  return insideTransaction.getStore() === true;
}

/** A programming error: code inside a transaction asked the pool for another connection. */
export class PoolInsideTransactionError extends Error {
  override name = 'PoolInsideTransactionError';
  constructor() {
    super(
      'a pool connection was requested inside a transaction: use the transaction (ctx.db), ' +
        'or ctx.afterCommit / ctx.onRollback for work that must commit on its own',
    );
  }
}

type ConnectCallback = (
  err: Error | undefined,
  client: pg.PoolClient | undefined,
  done: (release?: unknown) => void,
) => void;

// pg-pool's wording for a checkout that waited acquire_timeout_ms, and for a new connection that
// did not open in that time.
const TIMED_OUT = /^(timeout exceeded when trying to connect|Connection terminated due to connection timeout)/;

const busy = (cause: Error) => {
  const err = problem('DB_BUSY', 'Every database connection is in use; retry shortly', {
    extensions: { retryAfterSeconds: DB_BUSY_RETRY_AFTER_SECONDS },
  });
  err.cause = cause;
  return err;
};
const translate = (err: Error | undefined): Error | undefined => (err && TIMED_OUT.test(err.message) ? busy(err) : err);

/** A checkout from a Db that was never to be opened (unopenedDatabase). */
export class NoDatabaseError extends Error {
  override name = 'NoDatabaseError';
  constructor() {
    super('this app was built from the declarations alone, without a database: nothing may query it');
  }
}

/** Why a checkout is refused at once, if it is. */
type Refusal = () => Error | undefined;

const insideTransactionRefusal: Refusal = () =>
  insideTransaction.getStore() ? new PoolInsideTransactionError() : undefined;

/**
 * Every checkout goes through pool.connect (pool.query too), so the guard and the timeout's
 * translation sit there: a checkout inside a transaction fails at once, and one that waited too
 * long fails as DB_BUSY (503, Retry-After) instead of hanging.
 */
function guardCheckouts(pool: pg.Pool, onAcquire: ((waitSeconds: number) => void) | undefined, refuse: Refusal): void {
  const connect = timedCheckouts(
    pool.connect.bind(pool) as (cb?: ConnectCallback) => Promise<pg.PoolClient> | void,
    onAcquire,
  );
  const guarded = (cb?: ConnectCallback): Promise<pg.PoolClient> | void => {
    const refused = refuse();
    if (refused) {
      if (!cb) return Promise.reject(refused);
      process.nextTick(() => cb(refused, undefined, () => {}));
      return;
    }
    if (cb) return connect((err, client, done) => cb(translate(err), client, done));
    return (connect() as Promise<pg.PoolClient>).catch((err: Error) => {
      throw translate(err);
    });
  };
  pool.connect = guarded as typeof pool.connect;
}

/** The one place a checkout's wait is measured (the acquire-wait histogram), failed checkouts included. */
function timedCheckouts(
  connect: (cb?: ConnectCallback) => Promise<pg.PoolClient> | void,
  onAcquire: ((waitSeconds: number) => void) | undefined,
): (cb?: ConnectCallback) => Promise<pg.PoolClient> | void {
  if (!onAcquire) return connect;
  return (cb) => {
    const started = performance.now();
    const waited = () => onAcquire((performance.now() - started) / 1000);
    if (cb) {
      return connect((err, client, done) => {
        waited();
        cb(err, client, done);
      });
    }
    return (connect() as Promise<pg.PoolClient>).finally(waited);
  };
}

export interface PoolOptions {
  size: number;
  /** How long a checkout waits for a free connection (or a new one to open) before DB_BUSY. */
  acquireTimeoutMs: number;
  /**
   * PostgreSQL's statement_timeout for the transactions the service opens (see Db): a statement
   * running longer is cancelled by the server (57014, answered 503 DB_TIMEOUT), its transaction
   * rolls back and the connection stays usable. Unset: the server's own setting.
   */
  statementTimeoutMs?: number;
  /** database.direct_url; default: the url. */
  directUrl?: string;
  /**
   * 'unnamed': every statement leaves unnamed, for a pooler that does not carry prepared statements
   * from one transaction to the next (PgBouncer before 1.21). Default 'named'.
   */
  preparedStatements?: 'named' | 'unnamed';
  /** Told how long each checkout waited for its connection, in seconds (metrics). */
  onAcquire?: (waitSeconds: number) => void;
}

export function openDatabase(url: string, options: PoolOptions): Db {
  return database(url, options, insideTransactionRefusal);
}

/** Stands for a database in what is built from the declarations alone; never resolved nor connected to. */
const UNOPENED_URL = 'postgres://no-database.invalid/unopened';

/**
 * A Db that never connects: every checkout fails at once with NoDatabaseError. What is derived
 * from the declarations alone (the OpenAPI document: exportOpenApiDocument in app.ts) is built over
 * it, so it needs no PostgreSQL, and a build step that started to query would fail loudly rather
 * than pass on whatever database a developer has running.
 */
export function unopenedDatabase(): Db {
  return database(UNOPENED_URL, { size: 1, acquireTimeoutMs: 1 }, () => new NoDatabaseError());
}

function database(url: string, options: PoolOptions, refuse: Refusal): Db {
  // Pipeline mode (pg's documented `pipeline` option): a client writes each query at once instead
  // of after the previous answer, so queries issued together cost one round trip: the one-exchange
  // requests (statements.ts), the held-back BEGIN and the outbox insert sent with the COMMIT
  // (kysely-driver.ts) rely on it; the rest awaits query by query.
  const pool = new pg.Pool({
    connectionString: url,
    max: options.size,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: options.acquireTimeoutMs,
    pipeline: true,
    Client: options.preparedStatements === 'unnamed' ? UnnamedStatementsClient : GatheringClient,
  });
  guardCheckouts(pool, options.onAcquire, refuse);
  // An idle client losing its server must not crash the process; the next checkout reconnects.
  pool.on('error', () => {});
  // Nor may a checked-out client between queries (e.g. the server shutting down while the pool
  // ends): pg emits such errors on the client, and an unheard 'error' event ends the process.
  // A query in progress still fails with the error as usual.
  pool.on('connect', (client) => client.on('error', () => {}));
  // While tracing is on, each query is a span under the request's or job's (its text, never its values).
  const querySpans = kyselyQuerySpans();
  const kysely = new Kysely<Database>({
    dialect: new PipelinedDialect(pool),
    ...(querySpans ? { log: querySpans } : {}),
  });
  return {
    pool,
    kysely,
    url,
    directUrl: options.directUrl || url,
    statementTimeoutMs: options.statementTimeoutMs,
    close: async () => {
      await kysely.destroy();
    },
  };
}

/**
 * Hides the password of a connection URL for logs: the one before the host, and any given as a
 * parameter (`?password=`, which the driver reads as well; libpq's `sslpassword`).
 */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    for (const name of [...parsed.searchParams.keys()])
      if (/password/i.test(name)) parsed.searchParams.set(name, '***');
    return parsed.toString();
  } catch {
    return '(unparseable database URL)';
  }
}
