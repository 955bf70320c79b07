import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../db/embedded.ts';
import { runMigrations, type MigrationSource } from '../db/migrate.ts';

/** A PostgreSQL server where scratch databases may be created. */
export interface ScratchServer {
  /** Connection URL of a database on it from which `create database` works. */
  adminUrl: string;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * The given server, or else an embedded PostgreSQL started in a temporary directory for as long
 * as the caller needs it (stop() shuts it down and removes the directory).
 */
export async function scratchServer(adminUrl?: string): Promise<ScratchServer> {
  if (adminUrl) return { adminUrl, stop: async () => {} };
  const dir = mkdtempSync(join(tmpdir(), 'tenantry-scratch-pg-'));
  // The server runs as the postgres OS user when we are root: it must reach its data directory.
  chmodSync(dir, 0o755);
  try {
    const server = await startEmbeddedPostgres({ dir: join(dir, 'data'), port: await freePort() });
    return {
      adminUrl: server.adminUrl,
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

async function admin<T>(adminUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * Runs fn on a new, empty database of the server, migrated with the given sources in the order
 * given (the runner's: framework first, then the modules), and drops the database afterwards.
 */
export async function withScratchDatabase<T>(
  adminUrl: string,
  sources: readonly MigrationSource[],
  fn: (pool: pg.Pool) => Promise<T>,
): Promise<T> {
  const name = `tenantry_scratch_${randomBytes(6).toString('hex')}`;
  await admin(adminUrl, (client) => client.query(`create database ${client.escapeIdentifier(name)}`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const pool = new pg.Pool({ connectionString: url.toString(), max: 2 });
  try {
    await runMigrations(pool, [...sources]);
    return await fn(pool);
  } finally {
    await pool.end();
    await admin(adminUrl, (client) =>
      client.query(`drop database if exists ${client.escapeIdentifier(name)} with (force)`),
    ).catch(() => {});
  }
}
