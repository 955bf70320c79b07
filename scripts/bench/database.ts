import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ensureDatabase, startEmbeddedPostgres } from '../../framework/db/embedded.ts';
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
export async function openBenchDatabase(givenUrl: string): Promise<BenchDatabase> {
  if (givenUrl) {
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
    const server = await startEmbeddedPostgres({ dir: join(dir, 'data'), port: await freePort() });
    const url = await ensureDatabase(server.adminUrl, 'tenantry_bench');
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
