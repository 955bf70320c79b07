import { mkdtempSync, writeFileSync, existsSync, chmodSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { request } from 'node:http';
import pg from 'pg';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ROOT, migrationSources } from '../../framework/app.ts';
import { allModules } from '../../modules/index.ts';
import { createMigratedTestDatabase, createTestDatabase } from '../helpers/database.ts';
import { freePort } from '../helpers/ports.ts';

const NODE = join(ROOT, 'node_modules/.bin/node');
const dir = mkdtempSync(join(tmpdir(), 'tenantry-roles-'));
const running = new Set<ChildProcessWithoutNullStreams>();

const cleanup: string[] = [dir];
// Service processes by pid: under npm the service is a grandchild, which a failed test must not leave behind.
const servicePids = new Set<number>();

afterAll(() => {
  for (const child of running) child.kill('SIGKILL');
  for (const pid of servicePids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  for (const path of cleanup) rmSync(path, { recursive: true, force: true });
});

interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/** A started `node main.ts` with its parsed pino log. */
class Service {
  readonly child: ChildProcessWithoutNullStreams;
  readonly lines: LogLine[] = [];
  stderr = '';
  readonly exited: Promise<number | null>;
  private buffer = '';

  constructor(
    args: string[],
    cwd = ROOT,
    command: string[] = [NODE, join(ROOT, 'main.ts')],
    options: { ownGroup?: boolean } = {},
  ) {
    // ownGroup: a process group of its own, as a terminal gives a foreground job.
    this.child = spawn(command[0]!, [...command.slice(1), ...args], {
      cwd,
      env: cleanEnv(),
      detached: options.ownGroup ?? false,
    });
    running.add(this.child);
    this.child.stdout.on('data', (chunk: Buffer) => {
      this.buffer += chunk.toString();
      const parts = this.buffer.split('\n');
      this.buffer = parts.pop()!;
      // npm prints its own banner lines before the service's JSON log.
      for (const part of parts) {
        if (!part.startsWith('{')) continue;
        const line = JSON.parse(part) as LogLine;
        if (typeof line.pid === 'number') servicePids.add(line.pid);
        this.lines.push(line);
      }
    });
    this.child.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = new Promise((resolveExit) =>
      this.child.on('exit', (code) => {
        running.delete(this.child);
        resolveExit(code);
      }),
    );
  }

  async waitFor(msg: string, timeoutMs = 60_000): Promise<LogLine> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = this.lines.find((l) => l.msg === msg);
      if (line) return line;
      if (this.child.exitCode !== null)
        throw new Error(`exited ${this.child.exitCode} before "${msg}": ${this.stderr}`);
      if (Date.now() > deadline) throw new Error(`no "${msg}" within ${timeoutMs} ms: ${this.stderr}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  has(msg: string): boolean {
    return this.lines.some((l) => l.msg === msg);
  }
}

/** The child gets no TENANTRY_* variables from the environment running the tests. */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TENANTRY_')));
}

function writeConfig(name: string, yaml: string): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, yaml);
  return file;
}

function configFor(databaseUrl: string, extra = ''): string {
  return `server:\n  host: 127.0.0.1\n  port: 0\n  public_host: ops.localhost\ndatabase:\n  url: "${databaseUrl}"\n  pool_size: 3\n${extra}`;
}

function get(url: string, path: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolveGet, reject) => {
    const req = request(new URL(path, url), { headers: { host }, agent: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolveGet({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Waits until condition holds, polled by vi.waitFor. */
function poll(condition: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  return vi.waitFor(
    async () => {
      if (!(await condition())) throw new Error('condition not met in time');
    },
    { timeout: timeoutMs, interval: 25 },
  );
}

describe('process roles', () => {
  it('--role web: migrates, serves, logs role, URL, hidden password, mail mode and Node 24; SIGTERM finishes the in-flight request and exits 0', async () => {
    const databaseUrl = await createTestDatabase();
    const password = new URL(databaseUrl).password;
    expect(password.length).toBeGreaterThan(0);
    const service = new Service(['--role', 'web', '--config', writeConfig('web', configFor(databaseUrl))]);
    const started = await service.waitFor('tenantry started');

    expect(started).toMatchObject({ level: 30, role: 'web', publicHost: 'ops.localhost', mail: 'in-memory mailbox' });
    expect(started.node).toMatch(/^v24\./);
    expect(started.listening).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // What a person opens is the operator's host on that port, not the bound address.
    expect(started.url).toBe(`http://ops.localhost:${new URL(started.listening as string).port}`);
    const shownDatabase = started.database as string;
    expect(shownDatabase).toContain('***');
    expect(shownDatabase).toContain(new URL(databaseUrl).pathname);
    expect(shownDatabase).not.toContain(`:${password}@`);
    expect(JSON.stringify(service.lines)).not.toContain(`:${password}@`);
    // The in-memory mailbox is announced with a warning.
    expect(service.lines.find((l) => l.level === 40 && /in-memory mailbox/.test(l.msg))).toBeDefined();
    // Migrations ran before serving, and the web role starts no worker.
    const migrated = service.lines.findIndex((l) => l.msg === 'migrations applied');
    expect(migrated).toBeGreaterThanOrEqual(0);
    expect(migrated).toBeLessThan(service.lines.indexOf(started));
    expect(service.has('worker started')).toBe(false);

    const url = started.listening as string;
    expect((await get(url, '/health', '127.0.0.1')).status).toBe(200);
    expect((await get(url, '/ready', '127.0.0.1')).status).toBe(200);
    const noSite = await get(url, '/api/v1/admin/resources', 'nosuch.example');
    expect(noSite.status).toBe(404);
    expect(JSON.parse(noSite.body).code).toBe('NO_SITE');

    // Hold a request in flight: the host lookup waits on a lock this test holds.
    const blocker = new pg.Client({ connectionString: databaseUrl });
    await blocker.connect();
    try {
      await blocker.query('begin');
      await blocker.query('lock table tenant_hosts in access exclusive mode');
      const inFlight = get(url, '/api/v1/admin/resources', 'ops.localhost');
      await poll(async () => {
        const { rows } = await blocker.query<{ n: number }>(
          `select count(*)::int as n from pg_locks l join pg_database d on d.oid = l.database
            where not l.granted and d.datname = current_database()`,
        );
        return rows[0]!.n > 0;
      });
      service.child.kill('SIGTERM');
      await service.waitFor('shutting down: no new requests, finishing in-flight ones');
      // Still running: it waits for the request.
      expect(service.child.exitCode).toBeNull();
      await blocker.query('commit');
      const answered = await inFlight;
      expect(answered.status).toBe(401);
      expect(JSON.parse(answered.body).code).toBe('AUTH_REQUIRED');
    } finally {
      await blocker.end();
    }
    expect(await service.exited).toBe(0);
    expect(service.has('stopped')).toBe(true);
    expect(service.stderr).toBe('');
  });

  it('--role worker: migrates, starts the worker, serves no HTTP, hides a password given as a URL parameter; SIGTERM exits 0', async () => {
    const databaseUrl = await createTestDatabase();
    // The driver also reads the password from a `password` parameter: the log hides it there too.
    const password = new URL(databaseUrl).password;
    const given = new URL(databaseUrl);
    given.password = '';
    given.searchParams.set('password', password);
    const service = new Service(['--role', 'worker', '--config', writeConfig('worker', configFor(given.href))]);
    const started = await service.waitFor('tenantry started');
    expect(started).toMatchObject({ role: 'worker', mail: 'in-memory mailbox' });
    expect(started.database).toBe(`postgres://${given.username}@${given.host}${given.pathname}?password=***`);
    expect(JSON.stringify(service.lines)).not.toContain(`password=${password}`);
    expect(started.url).toBeUndefined();
    expect(started.listening).toBeUndefined();
    expect(started.node).toMatch(/^v24\./);
    expect(service.has('worker started')).toBe(true);
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query<{ n: number }>(
        `select count(*)::int as n from migration_history where owner = 'framework'`,
      );
      expect(rows[0]!.n).toBeGreaterThan(0);
    } finally {
      await db.end();
    }
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    expect(service.has('stopped')).toBe(true);
  });

  it('--role all with mail.host set: web and worker in one process, SMTP mail mode; SIGINT exits 0', async () => {
    // Migrating is the web and worker roles' test: this one starts on a migrated copy.
    const databaseUrl = await createMigratedTestDatabase(migrationSources(allModules));
    const config = configFor(databaseUrl, 'mail:\n  host: smtp.example.test\n  port: 2525\n');
    const service = new Service(['--role', 'all', '--config', writeConfig('all', config)]);
    const started = await service.waitFor('tenantry started');
    expect(started).toMatchObject({ role: 'all', mail: 'smtp smtp.example.test:2525' });
    expect(service.lines.some((l) => l.level === 40 && /in-memory mailbox/.test(l.msg))).toBe(false);
    expect(service.has('worker started')).toBe(true);
    expect((await get(started.listening as string, '/ready', '127.0.0.1')).status).toBe(200);
    service.child.kill('SIGINT');
    expect(await service.exited).toBe(0);
    expect(service.has('stopped')).toBe(true);
  });

  it('`npm run start:web` hands SIGTERM to the service, which stops gracefully', async () => {
    const databaseUrl = await createMigratedTestDatabase(migrationSources(allModules));
    const file = writeConfig('npm-web', configFor(databaseUrl));
    const service = new Service(['--config', file], ROOT, ['npm', 'run', '--silent', 'start:web', '--']);
    const started = await service.waitFor('tenantry started');
    expect(started).toMatchObject({ role: 'web' });
    const servicePid = started.pid as number;
    // SIGTERM to npm itself, as a process manager running `npm start` would send it.
    service.child.kill('SIGTERM');
    await service.waitFor('stopped', 15_000);
    await service.exited;
    await poll(async () => {
      try {
        process.kill(servicePid, 0);
        return false;
      } catch {
        return true;
      }
    });
  });

  it('loading the embedded PostgreSQL library leaves the exit code and the signals to the process', () => {
    // The library's own hooks would exit with 0 on beforeExit (a failed test run would pass) and exit at once on signals.
    const script = `
      const { loadEmbeddedPostgres } = await import(${JSON.stringify(join(ROOT, 'framework/db/embedded.ts'))});
      const signals = () => ['SIGINT', 'SIGTERM', 'SIGHUP', 'beforeExit', 'exit'].map((e) => process.listenerCount(e)).join(',');
      const before = signals();
      await loadEmbeddedPostgres();
      process.stdout.write(before + ' ' + signals());
      process.exitCode = 3;
    `;
    const result = spawnSync(NODE, ['--input-type=module', '-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(result.stderr).toBe('');
    const [before, after] = result.stdout.split(' ');
    expect(after).toBe(before);
    expect(result.status).toBe(3);
  });

  it('an invalid --role exits non-zero naming the allowed roles', () => {
    const result = spawnSync(NODE, ['main.ts', '--role', 'cron'], { cwd: ROOT, encoding: 'utf8', timeout: 20_000 });
    expect(result.status).toBe(1);
    expect(result.stderr).toBe('tenantry: --role must be one of web, worker, all (got cron)\n');
  });

  it('a startup with an unreachable database exits non-zero', () => {
    const file = writeConfig('unreachable', configFor('postgres://nobody:secret-pw@127.0.0.1:1/none'));
    const result = spawnSync(NODE, ['main.ts', '--role', 'web', '--config', file], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toBe(
      'tenantry: cannot connect to the database (database.url): connect ECONNREFUSED 127.0.0.1:1\n',
    );
    expect(result.stderr).not.toContain('secret-pw');
  });

  it('a database that refuses the connection the URL asks for (TLS of a server without it): one line naming the key, no stack', async () => {
    const databaseUrl = new URL(await createTestDatabase());
    // The run's PostgreSQL speaks no TLS: the driver throws a plain error, with no code.
    databaseUrl.searchParams.set('sslmode', 'verify-full');
    const file = writeConfig('no-tls', configFor(databaseUrl.href));
    const result = spawnSync(NODE, ['main.ts', '--role', 'web', '--config', file], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 20_000,
      env: cleanEnv(),
    });
    expect(result.stderr).toBe(
      'tenantry: cannot connect to the database (database.url): The server does not support SSL connections\n',
    );
    expect(result.status).toBe(1);
  });

  it('embedded PostgreSQL: the first start creates the data directory and the operator tenant, the second reuses both; SIGTERM and Ctrl-C leave nothing running', async () => {
    const work = mkdtempSync(join(tmpdir(), 'tenantry-embedded-'));
    cleanup.push(work);
    // PostgreSQL runs as the postgres OS user when we are root: it must be able to reach the directory.
    chmodSync(work, 0o755);
    const dataDir = join(work, 'data/postgres');
    const port = await freePort();
    const config = writeConfig(
      'embedded',
      `server:\n  port: 0\n  public_host: localhost\ndatabase:\n  url: ""\n  embedded_dir: ${dataDir}\n  embedded_port: ${port}\n`,
    );
    const operatorIds: string[] = [];
    for (const round of [1, 2]) {
      const service = new Service(['--role', 'all', '--config', config], work, undefined, { ownGroup: round === 2 });
      const started = await service.waitFor('tenantry started', 90_000);
      expect(service.has('created the operator tenant')).toBe(round === 1);
      const url = started.listening as string;
      expect((await get(url, '/health', 'localhost')).status).toBe(200);
      expect((await get(url, '/ready', 'localhost')).status).toBe(200);
      const me = await get(url, '/api/v1/admin/resources', 'localhost:3000');
      expect(JSON.parse(me.body).code).toBe('AUTH_REQUIRED');
      const noSite = await get(url, '/api/v1/admin/resources', 'nosuch.example');
      expect(noSite.status).toBe(404);
      expect(JSON.parse(noSite.body).code).toBe('NO_SITE');

      expect(started.database).toBe(`embedded PostgreSQL in ${dataDir} (port ${port})`);
      const db = new pg.Client({ connectionString: `postgres://postgres:postgres@127.0.0.1:${port}/tenantry` });
      await db.connect();
      operatorIds.push((await db.query<{ id: string }>('select id from tenants where is_operator')).rows[0]!.id);
      await db.end();

      if (round === 1) {
        service.child.kill('SIGTERM');
      } else {
        // Ctrl-C in a terminal: SIGINT to the whole process group, the embedded server included.
        process.kill(-service.child.pid!, 'SIGINT');
      }
      expect(await service.exited).toBe(0);
      expect(service.has('stopped')).toBe(true);
      expect(service.stderr).toBe('');
      // The embedded server stopped with the service.
      expect(existsSync(join(dataDir, 'postmaster.pid'))).toBe(false);
    }
    expect(operatorIds[1]).toBe(operatorIds[0]);
  }, 180_000);
});
