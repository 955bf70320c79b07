import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import pg from 'pg';
import supertest from 'supertest';
import { npmRun, startService, stopService } from '../e2e/processes.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { createCustomer, signInAs, startTestApp } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import { allModules } from '../../modules/index.ts';
import { FILES, filesUnder, form, tempFilesDir } from '../modules/file/helpers.ts';

/**
 * Fault: a crash between two steps (issue 31, point 7). An upload writes its blob, then commits its
 * row. The test holds the row back from its own connection (LOCK TABLE files IN EXCLUSIVE MODE:
 * the service's INSERT waits on it, no hook in the service), sees the blob on disk and the insert
 * waiting, and kills the service with SIGKILL. What is left is an orphan blob and no row, never a
 * row without its blob; `npm run job -- file-reconcile --at <2 h later>` removes the orphan.
 */

const HOST = 'crash.localhost';
const dir = tempFilesDir();
let databaseUrl: string;
let settings: Record<string, string>;
let service: { child: ChildProcess; url: string } | undefined;
let cookie: string;
let db: pg.Client;
let locker: pg.Client;

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  const setup = await startTestApp({
    databaseUrl,
    modules: allModules,
    config: testConfig({ files: { storage: 'local', dir } }),
  });
  const tenant = await createCustomer(setup, 'crash', HOST);
  cookie = (await signInAs(setup, tenant, ['file:read', 'file:manage'])).cookie;
  await setup.close();
  settings = {
    TENANTRY_DATABASE_URL: databaseUrl,
    TENANTRY_SERVER_PORT: '0',
    TENANTRY_SERVER_PUBLIC_HOST: 'operator.localhost',
    TENANTRY_FILES_STORAGE: 'local',
    TENANTRY_FILES_DIR: dir,
  };
  service = await startService(settings);
  db = new pg.Client({ connectionString: databaseUrl });
  locker = new pg.Client({ connectionString: databaseUrl });
  await Promise.all([db.connect(), locker.connect()]);
}, 90_000);
afterAll(async () => {
  if (service) await stopService(service.child);
  await locker?.end().catch(() => {});
  await db?.end();
  rmSync(dir, { recursive: true, force: true });
});

const blobs = () => filesUnder(dir).filter((f) => /^[0-9a-f]{2}\/[0-9a-f-]{36}$/.test(f));
const rows = async () => (await db.query<{ n: number }>('select count(*)::int as n from files')).rows[0]!.n;
/** Backends of this database waiting for a lock while inserting into files: the service's upload. */
const waitingInserts = async () =>
  (
    await db.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query ilike '%insert into "files"%'`,
    )
  ).rows[0]!.n;
/** Backends of this database still inside the upload's transaction (whatever they wait on). */
const uploadBackends = async () =>
  (
    await db.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and query ilike '%insert into "files"%' and state <> 'idle'`,
    )
  ).rows[0]!.n;

async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('a service killed after the blob is written and before its row commits', () => {
  it('leaves an orphan blob and no row; file-reconcile removes the orphan', async () => {
    await locker.query('begin');
    await locker.query('lock table files in exclusive mode');

    const { body, type } = form([
      { name: 'file', filename: 'crash.txt', type: 'text/plain', content: 'bytes written before the row' },
    ]);
    // The answer never comes: the process is killed while the request waits on the row.
    const pending = supertest(service!.url)
      .post(`${FILES}?visibility=private`)
      .set('Host', HOST)
      .set('Cookie', cookie)
      .set('Content-Type', type)
      .send(body)
      .then(
        (res) => ({ status: res.status as number }),
        (err: Error) => ({ error: err.message }),
      );

    // The first step is done (the blob is under its key), the second waits on the lock.
    await until('the blob and the waiting insert', async () => blobs().length === 1 && (await waitingInserts()) === 1);
    const [orphan] = blobs();
    expect(await rows()).toBe(0);

    service!.child.kill('SIGKILL');
    await new Promise((r) => service!.child.once('exit', r));
    service = undefined;
    expect(await pending).toHaveProperty('error');

    // The lock goes; the dead client's backend runs into its closed socket and rolls back.
    await locker.query('rollback');
    await until('the upload transaction to end', async () => (await uploadBackends()) === 0);
    expect(await rows()).toBe(0);
    expect(blobs()).toEqual([orphan]);

    // Within the hour an orphan may still be an upload whose row is being written: left alone.
    const now = await npmRun('job', ['file-reconcile'], settings);
    expect(now.code, now.stderr).toBe(0);
    expect(blobs()).toEqual([orphan]);

    // As if two hours had passed: the orphan goes, and no row ever named it.
    const at = new Date(Date.now() + 2 * 60 * 60 * 1000).toISOString();
    const run = await npmRun('job', ['file-reconcile', '--at', at], settings);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/"removed":1/);
    expect(blobs()).toEqual([]);
    expect(filesUnder(dir).filter((f) => f.startsWith('incoming/'))).toEqual([]);
    expect(await rows()).toBe(0);
  }, 60_000);
});
