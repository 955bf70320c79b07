import { createHash } from 'node:crypto';
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

export interface MigrationOptions {
  /**
   * database.allow_changed_migrations (development): an applied file changed or missing is
   * accepted, and a changed file's new checksum recorded, instead of refusing the start.
   */
  allowChanged?: boolean;
}

/** A file's SHA-256, hex: what migration_history records of every file it applies. */
export const migrationChecksum = (text: string | Buffer): string => createHash('sha256').update(text).digest('hex');

interface HistoryRow {
  owner: string;
  name: string;
  checksum: string | null;
}

/**
 * The applied files of the given owners that changed since (their SHA-256 differs from the one
 * recorded) or are gone, one line each naming the file and the fix. Rows of owners not given (a
 * module no longer installed) are not this start's business.
 */
function driftedFiles(sources: readonly MigrationSource[], rows: readonly HistoryRow[]): string[] {
  const lines: string[] = [];
  for (const row of rows) {
    const source = sources.find((s) => s.owner === row.owner);
    if (!source) continue;
    const path = join(source.dir, row.name);
    if (!existsSync(path)) {
      lines.push(
        `migration ${row.owner}/${row.name} is applied but its file is missing: restore it (an applied migration is never removed; undo it with a new one)`,
      );
    } else if (row.checksum !== null && row.checksum !== migrationChecksum(readFileSync(path))) {
      lines.push(
        `migration ${row.owner}/${row.name} changed after it was applied (its SHA-256 is not the one recorded): restore it and write the change as a new migration, or set database.allow_changed_migrations in development`,
      );
    }
  }
  return lines;
}

// One fixed key for the whole installation: every process serialises on it.
export const MIGRATION_LOCK_KEY = 7_265_441_001;

const CREATE_HISTORY = `create table if not exists migration_history (
  owner text not null,
  name text not null,
  applied_at timestamptz not null default now(),
  checksum text,
  primary key (owner, name)
)`;

// The checksum column is framework/0015's on a database from before it: read whether or not it is there.
const READ_HISTORY = `select owner, name, to_jsonb(h) ->> 'checksum' as checksum from migration_history h`;

/**
 * Applies pending SQL files of every owner, in owner order then file name order. Each file runs in
 * a transaction of its own that first takes the installation's advisory lock, transaction-scoped
 * (pg_advisory_xact_lock), then reads the history, applies the file and records it: the file
 * commits together with its history row and the lock goes with the commit or the rollback. So no
 * lock outlives its work, whichever connection a pooler in transaction mode hands each transaction,
 * and a process that dies while waiting or applying leaves nothing held. A failure rolls that file
 * back and stops, so nothing is ever half-applied. A file another file of its owner replaces (its
 * `-- replaces:` header) is not applied where it has not been already. Each file's SHA-256 is
 * recorded with it (rows from before checksums get theirs on the next start); an applied file
 * since changed or removed refuses the start before anything runs, naming it, unless
 * options.allowChanged.
 */
export async function runMigrations(
  pool: pg.Pool,
  sources: MigrationSource[],
  options: MigrationOptions = {},
): Promise<AppliedMigration[]> {
  const client = await pool.connect();
  const applied: AppliedMigration[] = [];
  // A migration (an index on a large table) and the wait for another process's migrations may
  // rightly run past a statement_timeout or lock_timeout the role or server sets: none in these
  // transactions (a lock_timeout cancelled a second process's wait on the advisory lock).
  const locked = async () => {
    await client.query('set local statement_timeout = 0; set local lock_timeout = 0');
    await client.query('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
  };
  try {
    // The history table first, committed on its own: it stays even when the first file fails.
    await inTransaction(client, async () => {
      await locked();
      await client.query(CREATE_HISTORY);
    });
    // The applied files as they are now, against what was recorded of them.
    await inTransaction(client, async () => {
      await locked();
      const done = await client.query<HistoryRow>(READ_HISTORY);
      const drifted = driftedFiles(sources, done.rows);
      if (drifted.length > 0 && !options.allowChanged) throw new MigrationError(drifted.join('\n'));
      if (await hasChecksumColumn(client))
        await recordChecksums(client, sources, done.rows, options.allowChanged === true);
    });
    for (;;) {
      const next = await inTransaction(client, async () => {
        await locked();
        const done = await client.query<{ owner: string; name: string }>('select owner, name from migration_history');
        const pending = firstPending(sources, new Set(done.rows.map((r) => `${r.owner}/${r.name}`)));
        if (!pending) return undefined;
        const bytes = readFileSync(join(pending.dir, pending.name));
        const control = transactionControl(bytes.toString('utf8'));
        if (control)
          throw new MigrationError(
            `migration ${pending.owner}/${pending.name} has its own ${control}: remove it (each file runs in a transaction of the runner's, which a COMMIT in the file would end half-way)`,
          );
        try {
          await client.query(bytes.toString('utf8'));
          await client.query('insert into migration_history (owner, name) values ($1, $2)', [
            pending.owner,
            pending.name,
          ]);
          // On a database from before checksums, framework/0015 adds the column: the rows before it wait for the end.
          if (await hasChecksumColumn(client))
            await client.query('update migration_history set checksum = $3 where owner = $1 and name = $2', [
              pending.owner,
              pending.name,
              migrationChecksum(bytes),
            ]);
        } catch (err) {
          throw new MigrationError(`migration ${pending.owner}/${pending.name} failed: ${(err as Error).message}`);
        }
        return { owner: pending.owner, name: pending.name };
      });
      if (!next) break;
      applied.push(next);
    }
    // The rows recorded before the column existed (this start's first files on an old database).
    await inTransaction(client, async () => {
      await locked();
      const unrecorded = await client.query<HistoryRow>(
        'select owner, name, checksum from migration_history where checksum is null',
      );
      await recordChecksums(client, sources, unrecorded.rows, false);
    });
  } finally {
    client.release();
  }
  return applied;
}

async function hasChecksumColumn(client: pg.PoolClient): Promise<boolean> {
  const { rows } = await client.query(
    `select 1 from information_schema.columns where table_name = 'migration_history' and column_name = 'checksum' and table_schema = current_schema()`,
  );
  return rows.length > 0;
}

/**
 * Records the checksum of each applied file that has none yet (applied before checksums), and,
 * where changes are allowed, the new checksum of a changed file.
 */
async function recordChecksums(
  client: pg.PoolClient,
  sources: readonly MigrationSource[],
  rows: readonly HistoryRow[],
  acceptChanged: boolean,
): Promise<void> {
  for (const row of rows) {
    const source = sources.find((s) => s.owner === row.owner);
    const path = source && join(source.dir, row.name);
    if (!path || !existsSync(path)) continue;
    const checksum = migrationChecksum(readFileSync(path));
    if (row.checksum === null || (acceptChanged && row.checksum !== checksum))
      await client.query('update migration_history set checksum = $3 where owner = $1 and name = $2', [
        row.owner,
        row.name,
        checksum,
      ]);
  }
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

// ROLLBACK TO (a savepoint) stays inside the transaction; PREPARE TRANSACTION ends it.
const ROLLBACK_TO = String.raw`rollback(?!\s+(?:(?:work|transaction)\s+)?to\b)`;
const CONTROL = new RegExp(
  String.raw`^(?:begin|start|commit|end|abort|prepare\s+transaction|${ROLLBACK_TO})\b(?!\s+atomic\b)`,
  'i',
);

/**
 * The first statement of the file that begins, ends or undoes a transaction (`BEGIN`, `COMMIT`...),
 * as written, or undefined. Comments, quoted strings and identifiers and dollar-quoted bodies are
 * skipped, and the statements of a `BEGIN ATOMIC ... END` function body are not at the top level.
 */
export function transactionControl(sql: string): string | undefined {
  let statement = '';
  let atomic = false;
  const flush = (): string | undefined => {
    const text = statement.trim();
    statement = '';
    if (/\bbegin\s+atomic\b/i.test(text)) atomic = !/\bend\s*$/i.test(text);
    else if (atomic) atomic = !/^end\b/i.test(text) && !/\bend\s*$/i.test(text);
    else if (CONTROL.test(text)) return text.split(/\s+/, 1)[0]!.toUpperCase();
    return undefined;
  };
  // Sticky: each matches at i only, so the scan stays linear in the file's length.
  const SKIPPED = /--[^\n]*|\/\*[\s\S]*?\*\/|[eE]'(?:[^'\\]|\\.|'')*'|'(?:[^']|'')*'|"(?:[^"]|"")*"/y;
  const DOLLAR = /\$(?:[A-Za-z_][A-Za-z_0-9]*)?\$/y;
  for (let i = 0; i < sql.length; ) {
    SKIPPED.lastIndex = i;
    DOLLAR.lastIndex = i;
    const skipped = SKIPPED.exec(sql)?.[0];
    const dollar = skipped === undefined ? DOLLAR.exec(sql)?.[0] : undefined;
    if (skipped !== undefined) {
      // A comment stands apart from the words around it; a string is kept as a placeholder.
      statement += skipped.startsWith('-') || skipped.startsWith('/') ? ' ' : "''";
      i += skipped.length;
    } else if (dollar !== undefined) {
      const end = sql.indexOf(dollar, i + dollar.length);
      i = end < 0 ? sql.length : end + dollar.length;
      statement += "''";
    } else if (sql[i] === ';') {
      const found = flush();
      if (found) return found;
      i++;
    } else {
      statement += sql[i];
      i++;
    }
  }
  return flush();
}
