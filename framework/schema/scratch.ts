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

/**
 * What a scratch connection's end while it sat idle says on stderr: the server ended it (an
 * administrator's pg_terminate_backend, a restart: 57P01). Without a listener for it, the pool's or
 * the client's 'error' event is thrown by Node, and the command dies on an uncaught exception;
 * listened to, the pool drops that connection and opens another when asked, and a query under way
 * fails its own promise, which the command reports.
 */
export const idleConnectionLost = (err: Error): string =>
  `scratch database: the server closed an idle connection (${err.message}); another is opened when needed\n`;

async function admin<T>(adminUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  // A query under way rejects with the error itself; between queries there is nothing to do.
  client.on('error', () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * Runs fn on a new, empty database of the server, migrated with the given sources in the order
 * given (the runner's: framework first, then the modules), and drops the database afterwards. An
 * idle connection the server ends is a warning (idleConnectionLost), never an uncaught exception.
 */
export async function withScratchDatabase<T>(
  adminUrl: string,
  sources: readonly MigrationSource[],
  fn: (pool: pg.Pool) => Promise<T>,
  warn: (line: string) => void = (line) => process.stderr.write(line),
): Promise<T> {
  const name = `tenantry_scratch_${randomBytes(6).toString('hex')}`;
  await admin(adminUrl, (client) => client.query(`create database ${client.escapeIdentifier(name)}`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const pool = new pg.Pool({ connectionString: url.toString(), max: 2 });
  pool.on('error', (err) => warn(idleConnectionLost(err)));
  // A checked-out connection between two queries has no pool listener: its next query fails instead.
  pool.on('connect', (client) => client.on('error', () => {}));
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
