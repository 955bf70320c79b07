import pg from 'pg';
import { Kysely, PostgresDialect } from 'kysely';
import type { Database } from './types.ts';
import { kyselyPool } from './statements.ts';

export interface Db {
  pool: pg.Pool;
  kysely: Kysely<Database>;
  url: string;
  close(): Promise<void>;
}

// bigint counts (count(*)) arrive as strings by default; our counts fit in a JS number.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export function openDatabase(url: string, poolSize: number): Db {
  // Pipeline mode: a client writes each query at once instead of after the previous answer; only
  // the held-back BEGIN (statements.ts) relies on it, everything else awaits query by query.
  const pool = new pg.Pool({ connectionString: url, max: poolSize, idleTimeoutMillis: 30_000, pipeline: true });
  // An idle client losing its server must not crash the process; the next checkout reconnects.
  pool.on('error', () => {});
  // Nor may a checked-out client between queries (e.g. the server shutting down while the pool
  // ends): pg emits such errors on the client, and an unheard 'error' event ends the process.
  // A query in progress still fails with the error as usual.
  pool.on('connect', (client) => client.on('error', () => {}));
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool: kyselyPool(pool) }) });
  return {
    pool,
    kysely,
    url,
    close: async () => {
      await kysely.destroy();
    },
  };
}

/** Hides the password of a connection URL for logs. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparseable database URL)';
  }
}
