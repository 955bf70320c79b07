import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { adminInvite, npmRun, printedLink, startService, stopService, type Finished } from './processes.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { freePort } from '../helpers/ports.ts';
import { ensureDatabase, startEmbeddedPostgres, type EmbeddedServer } from '../../framework/db/embedded.ts';

/**
 * The operator's commands run as a container or `kubectl exec` runs them: with the service's own
 * environment, beside the running service. They must work there: a command opens no listener (the
 * service holds the HTTP and metrics ports), and it finds the embedded PostgreSQL the service holds
 * whatever port that was started on, or says in one line what to set.
 */

const metricsAnswer = async (url: string) => (await fetch(`${url}/metrics`)).status;

/** The one-line failure of a command: no stack trace, and it says what to set. */
function expectOneLineFailure(run: Finished): void {
  expect(run.code, run.stdout).toBe(1);
  expect(run.stderr).not.toMatch(/^\s+at /m);
  expect(run.stderr.trim().split('\n'), run.stderr).toHaveLength(1);
}

describe('the operator commands beside a running service with metrics on', () => {
  let service: { child: ChildProcess; url: string; log: () => string };
  let settings: Record<string, string>;
  let metricsUrl: string;

  beforeAll(async () => {
    const metricsPort = await freePort();
    settings = {
      TENANTRY_DATABASE_URL: await createTestDatabase(),
      TENANTRY_SERVER_PORT: '0',
      TENANTRY_SERVER_PUBLIC_HOST: 'operator.localhost',
      TENANTRY_METRICS_PORT: String(metricsPort),
    };
    service = await startService(settings);
    metricsUrl = `http://127.0.0.1:${metricsPort}`;
    // The service holds the metrics port: what a command built like a service would try to open too.
    expect(await metricsAnswer(metricsUrl)).toBe(200);
  }, 90_000);
  afterAll(async () => {
    if (service) await stopService(service.child);
  });

  it('npm run admin:invite works with the service’s own environment, and opens no listener', async () => {
    const run = await adminInvite(['beside@example.com'], settings);
    expect(run.stderr).not.toContain('EADDRINUSE');
    expect(run.code, run.stderr).toBe(0);
    expect(printedLink(run.stdout).hostname).toBe('operator.localhost');
    expect(await metricsAnswer(metricsUrl)).toBe(200);
  });

  it('npm run job works with the service’s own environment', async () => {
    const run = await npmRun('job', ['auth-sweep'], settings);
    expect(run.stderr).not.toContain('EADDRINUSE');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^auth-sweep at .*\n {2}\(no tenant\): ok /);
  });

  it('npm run dead-letters works with the service’s own environment', async () => {
    const run = await npmRun('dead-letters', ['list'], settings);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('0 dead letters');
    // The service is still the one answering on its ports.
    expect(await metricsAnswer(metricsUrl)).toBe(200);
    expect(service.child.exitCode).toBeNull();
  });
});

describe('the operator commands with the service on its embedded PostgreSQL at another port', () => {
  let parent: string;
  let dir: string;
  let server: EmbeddedServer | undefined;

  beforeAll(async () => {
    parent = mkdtempSync(join(tmpdir(), 'tenantry-commands-'));
    // As root, PostgreSQL runs as the postgres OS user (framework/db/embedded.ts), who must reach the directory.
    chmodSync(parent, 0o755);
    dir = join(parent, 'postgres');
    // What `npm start` with TENANTRY_DATABASE_EMBEDDED_PORT set holds: the server, its data directory locked.
    server = await startEmbeddedPostgres({ dir, port: await freePort() });
    await ensureDatabase(server.adminUrl, 'tenantry');
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    if (parent) rmSync(parent, { recursive: true, force: true });
  }, 60_000);

  it('npm run admin:invite without that port reaches the server through its postmaster.pid', async () => {
    const environment = {
      TENANTRY_DATABASE_EMBEDDED_DIR: dir,
      // The port the command would try otherwise: nothing listens there.
      TENANTRY_DATABASE_EMBEDDED_PORT: String(await freePort()),
      TENANTRY_SERVER_PUBLIC_HOST: 'operator.localhost',
    };
    const run = await adminInvite(['other-port@example.com'], environment, 120_000);
    expect(run.stderr).not.toContain('postmaster.pid');
    expect(run.code, run.stderr).toBe(0);
    const url = new URL(server!.adminUrl);
    url.pathname = '/tenantry';
    const client = new pg.Client({ connectionString: url.toString() });
    await client.connect();
    try {
      const { rows } = await client.query(
        `select u.roles from users u join tenants t on t.id = u.tenant_id where t.is_operator and u.email = 'other-port@example.com'`,
      );
      expect(rows).toEqual([{ roles: ['admin'] }]);
    } finally {
      await client.end();
    }
    const letters = await npmRun('dead-letters', ['list'], environment);
    expect(letters.code, letters.stderr).toBe(0);
  }, 150_000);

  it('says in one line what to set when the server holding the directory does not answer', async () => {
    const held = join(parent, 'held');
    mkdirSync(held);
    const silent = await freePort();
    // A lock file as PostgreSQL writes it, naming a live process (this one) and a port where nothing answers.
    writeFileSync(
      join(held, 'postmaster.pid'),
      `${process.pid}\n${held}\n1700000000\n${silent}\n\n127.0.0.1\n  1234567     0\nready   \n`,
    );
    const run = await adminInvite(['held@example.com'], {
      TENANTRY_DATABASE_EMBEDDED_DIR: held,
      TENANTRY_DATABASE_EMBEDDED_PORT: String(await freePort()),
    });
    expectOneLineFailure(run);
    expect(run.stderr).toContain(`is running (process ${process.pid}, port ${silent}) but does not answer there`);
    expect(run.stderr).toContain('TENANTRY_DATABASE_URL');
  });

  it('says in one line what to set when it cannot start the embedded server', async () => {
    const file = join(parent, 'a-file');
    writeFileSync(file, '');
    for (const [script, args] of [
      ['admin:invite', ['nowhere@example.com']],
      ['job', ['auth-sweep']],
      ['dead-letters', ['list']],
    ] as const) {
      const run = await npmRun(script, [...args], {
        TENANTRY_DATABASE_EMBEDDED_DIR: join(file, 'postgres'),
        TENANTRY_DATABASE_EMBEDDED_PORT: String(await freePort()),
      });
      expectOneLineFailure(run);
      expect(run.stderr, script).toContain('TENANTRY_DATABASE_EMBEDDED_PORT');
    }
  });
});
