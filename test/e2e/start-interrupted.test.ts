import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import pg from 'pg';
import { REPO, childEnv } from './processes.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { MIGRATION_LOCK_KEY } from '../../framework/db/migrate.ts';

/**
 * A start that hangs obeys SIGTERM (issue 49, point 1). Here the start waits for the migrations'
 * lock, which another session holds (as a process migrating a large table would, or a lock
 * leaked through a pooler): a process manager stopping the service must not wait for that.
 */

let url: string;
let holder: pg.Client;

beforeAll(async () => {
  url = await createTestDatabase();
  holder = new pg.Client({ connectionString: url });
  await holder.connect();
});
afterAll(async () => {
  await holder?.end();
});

const waitingForTheLock = async (): Promise<number> => {
  const { rows } = await holder.query<{ n: number }>(
    `select count(*)::int as n from pg_locks
      where locktype = 'advisory' and not granted
        and database = (select oid from pg_database where datname = current_database())`,
  );
  return rows[0]!.n;
};

async function until(what: string, condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('a start waiting for the migrations lock', () => {
  it('stops at SIGTERM at once: exit 0, "stopped while starting", and its wait ends with the holder', async () => {
    await holder.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    const child = spawn(process.execPath, ['main.ts', '--role', 'web'], {
      cwd: REPO,
      env: childEnv({
        TENANTRY_DATABASE_URL: url,
        TENANTRY_SERVER_PORT: '0',
        TENANTRY_SERVER_LOG_LEVEL: 'info',
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<{ code: number | null; at: number }>((resolve) =>
      child.once('exit', (code) => resolve({ code, at: Date.now() })),
    );
    try {
      await until('the start to wait for the lock', async () => (await waitingForTheLock()) === 1, 60_000);
      const signalled = Date.now();
      child.kill('SIGTERM');
      const outcome = await Promise.race([
        exited,
        new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 10_000)),
      ]);
      // Still holding the lock: the start could not have ended any other way.
      expect(outcome, `no exit within 10 s of SIGTERM\n${output}`).toBeDefined();
      expect(outcome!.code, output).toBe(0);
      expect(outcome!.at - signalled).toBeLessThan(10_000);
      expect(output).toContain('stopped while starting');
      expect(output).not.toContain('tenantry started');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await holder.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
    // Its server session, left waiting, ends once it gets the lock: nothing stays held or waiting.
    await until(
      'the lock to be free',
      async () => {
        const { rows } = await holder.query<{ n: number }>(
          `select count(*)::int as n from pg_locks
            where locktype = 'advisory'
              and database = (select oid from pg_database where datname = current_database())`,
        );
        return rows[0]!.n === 0;
      },
      10_000,
    );
    const { rows } = await holder.query<{ n: number }>(
      `select count(*)::int as n from information_schema.tables where table_name = 'migration_history'`,
    );
    expect(rows[0]!.n).toBe(0);
  }, 90_000);
});
