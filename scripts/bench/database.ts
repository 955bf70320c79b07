import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ensureDatabase, startEmbeddedPostgres, type EmbeddedServer } from '../../framework/db/embedded.ts';
import { redactUrl } from '../../framework/db/pool.ts';

export interface BenchDatabase {
  url: string;
  /** For the report: where the database runs and how commits are made durable. */
  description: string;
  settings: Record<string, string>;
  /** The embedded server's postmaster, whose children's CPU time the report shows; unknown for a given database. */
  postmasterPid?: number;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no free port')),
      );
    });
  });
}

/**
 * The database the run measures against: the given one (a scratch database; the run adds two
 * tenants and their rows), or an embedded server of its own in a temporary directory, removed
 * afterwards, so a run never touches data/postgres.
 */
export async function openBenchDatabase(
  givenUrl: string,
  options: { statements?: boolean } = {},
): Promise<BenchDatabase> {
  if (givenUrl) {
    if (options.statements)
      throw new Error('pg_stat_statements is loaded into the embedded server only: no --database-url');
    return {
      url: givenUrl,
      description: `given database ${redactUrl(givenUrl)}`,
      settings: await durability(givenUrl),
      stop: async () => {},
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'tenantry-bench-'));
  // The server runs as the postgres OS user when we are root: it must reach its data directory.
  chmodSync(dir, 0o755);
  try {
    const port = await freePort();
    let server = await startEmbeddedPostgres({ dir: join(dir, 'data'), port });
    if (options.statements) server = await loadStatements(server, join(dir, 'data'), port);
    const url = await ensureDatabase(server.adminUrl, 'tenantry_bench');
    if (options.statements) await runOn(url, ['create extension if not exists pg_stat_statements']);
    return {
      url,
      description: `embedded PostgreSQL on 127.0.0.1:${server.port} (temporary directory)`,
      settings: await durability(url),
      postmasterPid: Number(readFileSync(join(dir, 'data', 'postmaster.pid'), 'utf8').split('\n', 1)[0]),
      stop: async () => {
        await server.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/**
 * pg_stat_statements loaded (a restart), nested statements (triggers, functions) and planning
 * counted, and the time of WAL writes and fsyncs kept (pg_stat_io): what a breakdown of a write's
 * cost in the server needs.
 */
async function loadStatements(server: EmbeddedServer, dir: string, port: number): Promise<EmbeddedServer> {
  await runOn(
    server.adminUrl,
    [
      `shared_preload_libraries = 'pg_stat_statements'`,
      `pg_stat_statements.track = 'all'`,
      'pg_stat_statements.track_planning = on',
      'track_wal_io_timing = on',
    ].map((setting) => `alter system set ${setting}`),
  );
  await server.stop();
  return startEmbeddedPostgres({ dir, port });
}

/** Statements one at a time on one connection (ALTER SYSTEM refuses a transaction block). */
async function runOn(url: string, statements: readonly string[]): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (const sql of statements) await client.query(sql);
  } finally {
    await client.end();
  }
}

/** The settings that decide what a commit costs, so the report can state them. */
async function durability(url: string): Promise<Record<string, string>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string; setting: string }>(
      `select name, setting from pg_settings
        where name in ('server_version', 'fsync', 'synchronous_commit', 'wal_sync_method', 'shared_buffers', 'max_connections')
        order by name`,
    );
    return Object.fromEntries(rows.map((r) => [r.name, r.setting]));
  } finally {
    await client.end();
  }
}
