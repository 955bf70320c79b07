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

/**
 * Applies pending SQL files of every owner, in owner order then file name order, behind an
 * advisory lock. Each file commits together with its history row; a failure rolls that file back
 * and stops, so nothing is ever half-applied. A file another file of its owner replaces (its
 * `-- replaces:` header) is not applied where it has not been already.
 */
export async function runMigrations(pool: pg.Pool, sources: MigrationSource[]): Promise<AppliedMigration[]> {
  const client = await pool.connect();
  const applied: AppliedMigration[] = [];
  try {
    // A migration (an index on a large table) and the wait for another process's migrations may
    // rightly run past the pool's statement_timeout: none here; reset before the release.
    await client.query('set statement_timeout = 0');
    await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(`create table if not exists migration_history (
      owner text not null,
      name text not null,
      applied_at timestamptz not null default now(),
      primary key (owner, name)
    )`);
    const done = await client.query<{ owner: string; name: string }>('select owner, name from migration_history');
    const seen = new Set(done.rows.map((r) => `${r.owner}/${r.name}`));
    for (const source of sources) {
      const files = listSqlFiles(source.dir);
      const replaced = replacedFiles(source, files);
      for (const name of files) {
        if (seen.has(`${source.owner}/${name}`) || replaced.has(name)) continue;
        const text = readFileSync(join(source.dir, name), 'utf8');
        try {
          await client.query('begin');
          await client.query(text);
          await client.query('insert into migration_history (owner, name) values ($1, $2)', [source.owner, name]);
          await client.query('commit');
        } catch (err) {
          await client.query('rollback').catch(() => {});
          throw new MigrationError(`migration ${source.owner}/${name} failed: ${(err as Error).message}`);
        }
        applied.push({ owner: source.owner, name });
      }
    }
  } finally {
    await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => {});
    await client.query('reset statement_timeout').catch(() => {});
    client.release();
  }
  return applied;
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
