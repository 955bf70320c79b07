import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ensureDatabase, startEmbeddedPostgres } from '../../framework/db/embedded.ts';
import { dbResetCommand, DEVELOPMENT_DATABASE } from '../../scripts/db-reset.ts';
import { testConfig } from '../helpers/config.ts';
import { npmRun } from './processes.ts';

/**
 * Issue 50, point 2: `npm run db:reset` empties the embedded development database (the way back
 * from a migration changed after it was applied, which deleting data/ used to be), and is refused
 * in one line when database.url is set (development only) or while the embedded server runs.
 */

let root: string;
let dir: string;
let port: number;

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

const run = async (config: ReturnType<typeof testConfig>) => {
  const out: string[] = [];
  const err: string[] = [];
  const status = await dbResetCommand([], { config, out: (t) => out.push(t), err: (t) => err.push(t) });
  return { status, out: out.join(''), err: err.join('') };
};

const tablesOf = async (url: string): Promise<string[]> => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(
      `select tablename as name from pg_tables where schemaname = 'public' order by 1`,
    );
    return rows.map((r) => r.name);
  } finally {
    await client.end();
  }
};

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'tenantry-db-reset-'));
  // The server runs as the postgres OS user when we are root: it must reach its data directory.
  chmodSync(root, 0o755);
  dir = join(root, 'postgres');
  port = await freePort();
});
afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('npm run db:reset', () => {
  it('is refused in one line when database.url is set, as a command too', { timeout: 60_000 }, async () => {
    const refused = await run(
      testConfig({ database: { url: 'postgres://tenantry@127.0.0.1:1/tenantry', embedded_dir: dir } }),
    );
    expect(refused).toEqual({
      status: 1,
      out: '',
      err: 'db:reset: database.url is set: db:reset empties only the embedded development database, never a configured server (drop that database with its own tools)\n',
    });
    const command = await npmRun('db:reset', [], { TENANTRY_DATABASE_URL: 'postgres://tenantry@127.0.0.1:1/tenantry' });
    expect(command.code, command.stderr).toBe(1);
    expect(command.stderr).toContain(refused.err);
  });

  it('has nothing to empty before the first start', async () => {
    expect(await run(testConfig({ database: { embedded_dir: dir, embedded_port: port } }))).toEqual({
      status: 0,
      out: `no development database in ${dir}: nothing to empty\n`,
      err: '',
    });
    expect(existsSync(dir)).toBe(false);
  });

  it('empties the embedded database; refused while the server runs', { timeout: 180_000 }, async () => {
    const config = testConfig({ database: { embedded_dir: dir, embedded_port: port } });
    // A development database that has been started: migrated tables, rows.
    let server = await startEmbeddedPostgres({ dir, port });
    let url = '';
    try {
      url = await ensureDatabase(server.adminUrl, DEVELOPMENT_DATABASE);
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query(
        `create table migration_history (owner text, name text); insert into migration_history values ('framework', '0001_core.sql')`,
      );
      await client.end();
      expect(await tablesOf(url)).toEqual(['migration_history']);

      const running = await run(config);
      expect(running.status).toBe(1);
      expect(running.err).toMatch(
        new RegExp(
          `^db:reset: the embedded PostgreSQL in ${dir} is running \\(process \\d+, port ${port}\\): stop the service, then run npm run db:reset again\\n$`,
        ),
      );
      expect(await tablesOf(url)).toEqual(['migration_history']);
    } finally {
      await server.stop();
    }

    expect(await run(config)).toEqual({
      status: 0,
      out: `emptied the development database (tenantry in ${dir}): the next npm start migrates it from the first file and creates the operator's tenant again\n`,
      err: '',
    });

    server = await startEmbeddedPostgres({ dir, port });
    try {
      expect(await tablesOf(url)).toEqual([]);
    } finally {
      await server.stop();
    }
  });
});
