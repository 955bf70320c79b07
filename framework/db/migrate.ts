import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';

export interface MigrationSource {
  owner: string;
  dir: string;
}

export interface AppliedMigration {
  owner: string;
  name: string;
}

export class MigrationError extends Error {
  override name = 'MigrationError';
}

// One fixed key for the whole installation: every process serialises on it.
export const MIGRATION_LOCK_KEY = 7_265_441_001;

const CREATE_HISTORY = `create table if not exists migration_history (
  owner text not null,
  name text not null,
  applied_at timestamptz not null default now(),
  primary key (owner, name)
)`;

/**
 * Applies pending SQL files of every owner, in owner order then file name order. Each file runs in
 * a transaction of its own that first takes the installation's advisory lock, transaction-scoped
 * (pg_advisory_xact_lock), then reads the history, applies the file and records it: the file
 * commits together with its history row and the lock goes with the commit or the rollback. So no
 * lock outlives its work, whichever connection a pooler in transaction mode hands each transaction,
 * and a process that dies while waiting or applying leaves nothing held. A failure rolls that file
 * back and stops, so nothing is ever half-applied. A file another file of its owner replaces (its
 * `-- replaces:` header) is not applied where it has not been already.
 */
export async function runMigrations(pool: pg.Pool, sources: MigrationSource[]): Promise<AppliedMigration[]> {
  const client = await pool.connect();
  const applied: AppliedMigration[] = [];
  // A migration (an index on a large table) and the wait for another process's migrations may
  // rightly run past a statement_timeout the role or server sets: none in these transactions.
  const locked = async () => {
    await client.query('set local statement_timeout = 0');
    await client.query('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
  };
  try {
    // The history table first, committed on its own: it stays even when the first file fails.
    await inTransaction(client, async () => {
      await locked();
      await client.query(CREATE_HISTORY);
    });
    for (;;) {
      const next = await inTransaction(client, async () => {
        await locked();
        const done = await client.query<{ owner: string; name: string }>('select owner, name from migration_history');
        const pending = firstPending(sources, new Set(done.rows.map((r) => `${r.owner}/${r.name}`)));
        if (!pending) return undefined;
        const text = readFileSync(join(pending.dir, pending.name), 'utf8');
        try {
          await client.query(text);
          await client.query('insert into migration_history (owner, name) values ($1, $2)', [
            pending.owner,
            pending.name,
          ]);
        } catch (err) {
          throw new MigrationError(`migration ${pending.owner}/${pending.name} failed: ${(err as Error).message}`);
        }
        return { owner: pending.owner, name: pending.name };
      });
      if (!next) break;
      applied.push(next);
    }
  } finally {
    client.release();
  }
  return applied;
}

/** Runs fn between BEGIN and COMMIT on the client; a failure rolls back (the lock with it) and is rethrown. */
async function inTransaction<T>(client: pg.PoolClient, fn: () => Promise<T>): Promise<T> {
  await client.query('begin');
  try {
    const result = await fn();
    await client.query('commit');
    return result;
  } catch (err) {
    await client.query('rollback').catch(() => {});
    throw err;
  }
}

/** The first file, in owner order then file name order, that the history does not list. */
function firstPending(
  sources: readonly MigrationSource[],
  seen: ReadonlySet<string>,
): (AppliedMigration & { dir: string }) | undefined {
  for (const source of sources) {
    const files = listSqlFiles(source.dir);
    const replaced = replacedFiles(source, files);
    for (const name of files) {
      if (!seen.has(`${source.owner}/${name}`) && !replaced.has(name))
        return { owner: source.owner, name, dir: source.dir };
    }
  }
  return undefined;
}

/** A file's first line `-- replaces: 0001_a.sql, 0002_b.sql`: earlier files of its owner it stands in for. */
const REPLACES = /^--[ \t]*replaces:[ \t]*(.+)$/m;

/**
 * The files of an owner that another of its files replaces (its first line: `-- replaces: <files>`).
 * A replaced file never runs on a database that has not applied it; the replacing file, written to
 * work whether or not the files it replaces ran, runs in its place. So a table can change owner
 * without editing a migration an installation has applied: the new owner's migration creates it
 * where it is missing, and the old owner's replacing file adds only what the old owner keeps.
 */
function replacedFiles(source: MigrationSource, files: readonly string[]): Set<string> {
  const replaced = new Set<string>();
  for (const name of files) {
    const firstLine = readFileSync(join(source.dir, name), 'utf8').split('\n', 1)[0]!;
    const header = REPLACES.exec(firstLine);
    if (!header) continue;
    for (const other of header[1]!.split(',').map((n) => n.trim())) {
      if (!files.includes(other) || other >= name)
        throw new MigrationError(
          `migration ${source.owner}/${name} replaces ${other}, which is no earlier file of ${source.owner}`,
        );
      replaced.add(other);
    }
  }
  return replaced;
}

function listSqlFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort();
}
