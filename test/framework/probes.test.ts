import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { runReadiness } from '../../framework/http/probes.ts';

let app: TestApp;
let admin: pg.Client;
let dbName: string;

beforeAll(async () => {
  app = await startTestApp();
  dbName = new URL(app.databaseUrl).pathname.slice(1);
  admin = new pg.Client({ connectionString: inject('pgAdminUrl') });
  await admin.connect();
});
afterAll(async () => {
  await admin.query(`alter database ${admin.escapeIdentifier(dbName)} allow_connections true`).catch(() => {});
  await admin?.end();
  await app?.close();
});

/** Makes the app's database unreachable: no new connection is accepted and the open ones are cut. */
async function takeDatabaseDown(): Promise<void> {
  await admin.query(`alter database ${admin.escapeIdentifier(dbName)} allow_connections false`);
  await admin.query(
    'select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
    [dbName],
  );
}

async function bringDatabaseBack(): Promise<void> {
  await admin.query(`alter database ${admin.escapeIdentifier(dbName)} allow_connections true`);
}

describe('probes', () => {
  it('GET /health answers 200', async () => {
    const res = await app.http('any.host.example').get('/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('GET /ready answers 200 with the database check passing, database first', async () => {
    const res = await app.http('10.0.0.1').get('/ready');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('ready');
    expect(res.body.checks[0]).toEqual({ name: 'database', ok: true });
  });

  it('with the database unreachable: /ready 503 naming the database check, /health still 200', async () => {
    await takeDatabaseDown();
    try {
      const ready = await app.http('10.0.0.1').get('/ready');
      expect(ready.status).toBe(503);
      expect(ready.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(ready.body).toMatchObject({
        type: 'https://tenantry.dev/problems/NOT_READY',
        title: 'Not ready',
        status: 503,
        code: 'NOT_READY',
        check: 'database',
        detail: 'check database failed',
      });
      expect(ready.body.checks).toEqual([
        { name: 'database', ok: false },
        { name: 'storage', ok: true },
      ]);
      // The reason stays in the logs: nothing of the server's message reaches the caller.
      expect(ready.text).not.toContain(dbName);

      const health = await app.http('10.0.0.1').get('/health');
      expect(health.status).toBe(200);
      expect(health.body).toEqual({ status: 'ok' });
    } finally {
      await bringDatabaseBack();
    }
    // Ready again once the database is: the pool reconnects on its own.
    const deadline = Date.now() + 10_000;
    let status = 0;
    while (Date.now() < deadline && (status = (await app.http('10.0.0.1').get('/ready')).status) !== 200) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe(200);
  });

  it('runs every check in order and bounds a hung one', async () => {
    const calls: string[] = [];
    const results = await runReadiness(
      [
        { name: 'database', check: async () => void calls.push('database') },
        {
          name: 'queue',
          check: () => {
            calls.push('queue');
            return new Promise<void>(() => {});
          },
        },
        { name: 'mail', check: async () => void calls.push('mail') },
      ],
      50,
    );
    expect(results).toEqual([
      { name: 'database', ok: true },
      { name: 'queue', ok: false, error: 'timed out' },
      { name: 'mail', ok: true },
    ]);
    expect(calls).toEqual(['database', 'queue', 'mail']);
  });
});
