import { mkdtempSync, chmodSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { validateConfig } from '../../framework/config/load.ts';
import { buildApp } from '../../framework/app.ts';
import { ensureDatabase, startEmbeddedPostgres, type EmbeddedServer } from '../../framework/db/embedded.ts';
import type { ModuleDefinition } from '../../framework/entity/module-definition.ts';
import { allModules } from '../../modules/index.ts';
import { testkitModule } from '../../test/helpers/testkit-module.ts';
import { freePort } from './database.ts';
import { send } from './http.ts';
import { signIn } from './login.ts';
import { BENCH_PASSWORD, seed } from './seed.ts';

/**
 * What history costs a write in work PostgreSQL does, not in time: figures a loaded machine cannot
 * bend (issue 46 point 7, docs/performance.md "History cost"). The test kit's widget is created and
 * PATCHed over HTTP, one request at a time, by the service with its history on and again with it
 * declared `history: false` (the history bench's two sides, one after the other on one embedded
 * server with pg_stat_statements). Per write: the WAL PostgreSQL wrote (pg_current_wal_lsn() over
 * the writes, commits included), and per statement of the write's transaction its buffers touched
 * (shared hit + read), dirtied, and its WAL records, full-page images and bytes.
 *
 *   node scripts/bench/history-wal.ts [writes per kind, default 2000]
 */
const WRITES = Number(process.argv[2] ?? 2000);
const WARMUP = 200;
const PATCHED_ROWS = 1000;
const WIDGETS = '/api/v1/testkit/widgets';

interface StatementCost {
  query: string;
  calls: number;
  blocks: number;
  dirtied: number;
  walRecords: number;
  walFpi: number;
  walBytes: number;
}

interface KindCost {
  walBytesPerWrite: number;
  /** CPU time per write of the database's client backends (the service's connections), from /proc. */
  backendCpuUs: number;
  /** CPU time per write of this process: the service and the client sending the writes. */
  processCpuUs: number;
  statements: StatementCost[];
}

const TICK_US = 1_000_000 / 100;

/** utime + stime of the database's client backends but the admin's own, in microseconds. */
async function backendsCpuUs(admin: pg.Pool): Promise<number> {
  const { rows } = await admin.query<{ pid: number }>(
    `select pid from pg_stat_activity where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid()`,
  );
  let ticks = 0;
  for (const { pid } of rows) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // Gone meanwhile.
    }
  }
  return ticks * TICK_US;
}

function switched(module: ModuleDefinition, history: boolean): ModuleDefinition {
  if (history) return module;
  return {
    ...module,
    entities: (module.entities ?? []).map((e) =>
      (e as { name?: string }).name === 'widget' ? ({ ...e, history: false } as typeof e) : e,
    ),
  };
}

async function startServer(dir: string, port: number): Promise<EmbeddedServer> {
  return startEmbeddedPostgres({ dir, port });
}

async function measureSide(url: string, admin: pg.Pool, history: boolean): Promise<Record<string, KindCost>> {
  const config = validateConfig(
    {
      server: { host: '127.0.0.1', port: 0, public_host: 'localhost', log_level: 'warn' },
      database: { url, pool_size: 4 },
    },
    'history WAL settings',
    {},
  );
  const app = await buildApp({
    config,
    modules: [...allModules, switched(testkitModule, history)],
    databaseUrl: url,
    // The web role only: no relay or jobs write WAL of their own while the writes are counted.
    role: 'web',
    logger: pino({ level: 'warn' }) as FastifyBaseLogger,
  });
  try {
    const runId = `${history ? 'on' : 'off'}${Date.now().toString(36)}`;
    const seeded = await seed(app.services, {
      runId,
      rowsPerTenant: PATCHED_ROWS,
      wrongPasswordAccounts: 0,
      notifications: 0,
    });
    await app.web!.listen({ host: '127.0.0.1', port: 0 });
    const address = app.web!.server.address();
    if (typeof address !== 'object' || !address) throw new Error('no address');
    const port = address.port;
    const tenant = seeded.tenants[0]!;
    const cookie = await signIn(port, tenant.host, seeded.email, BENCH_PASSWORD);
    const ids = Array.from(
      { length: PATCHED_ROWS },
      (_, i) => `${tenant.id.slice(0, 8)}-0000-7000-8000-${(i + 1).toString(16).padStart(12, '0')}`,
    );
    let n = 0;
    const create = async () => {
      n++;
      const answer = await send(port, {
        method: 'POST',
        path: WIDGETS,
        host: tenant.host,
        headers: { cookie },
        json: { name: `wal-${runId}-${n}`, size: 7, color: 'blue', note: 'created by the benchmark' },
      });
      if (answer.status !== 201) throw new Error(`create answered ${answer.status}: ${answer.body.slice(0, 300)}`);
    };
    const patch = async () => {
      n++;
      const answer = await send(port, {
        method: 'PATCH',
        path: `${WIDGETS}/${ids[n % PATCHED_ROWS]}`,
        host: tenant.host,
        headers: { cookie },
        json: { size: n % 1000, note: `patched ${n}` },
      });
      if (answer.status !== 200) throw new Error(`PATCH answered ${answer.status}: ${answer.body.slice(0, 300)}`);
    };
    const result: Record<string, KindCost> = {};
    for (const [kind, write] of [
      ['create', create],
      ['patch', patch],
    ] as const) {
      for (let i = 0; i < WARMUP; i++) await write();
      // A checkpoint first, as the server makes every few minutes: the writes pay the full-page
      // images of the pages they touch first after it, as they do in a run.
      await admin.query('checkpoint');
      await admin.query('select pg_stat_statements_reset()');
      const lsn0 = (await admin.query<{ l: string }>('select pg_current_wal_lsn() as l')).rows[0]!.l;
      const cpu0 = await backendsCpuUs(admin);
      const own0 = process.cpuUsage();
      for (let i = 0; i < WRITES; i++) await write();
      const own = process.cpuUsage(own0);
      const backendCpuUs = ((await backendsCpuUs(admin)) - cpu0) / WRITES;
      const bytes = Number(
        (await admin.query<{ b: string }>('select pg_wal_lsn_diff(pg_current_wal_lsn(), $1) as b', [lsn0])).rows[0]!.b,
      );
      // Backends report their statements' figures when idle; give them the moment.
      await new Promise((r) => setTimeout(r, 1500));
      const { rows } = await admin.query<{
        query: string;
        calls: string;
        blocks: string;
        dirtied: string;
        wal_records: string;
        wal_fpi: string;
        wal_bytes: string;
      }>(
        `select s.query, s.calls, s.shared_blks_hit + s.shared_blks_read as blocks, s.shared_blks_dirtied as dirtied,
                s.wal_records, s.wal_fpi, s.wal_bytes
           from pg_stat_statements s join pg_database d on d.oid = s.dbid
          where d.datname = current_database() and s.calls >= $1 and s.query not like '%pg_stat_statements%'
          order by s.wal_bytes desc, s.shared_blks_hit desc`,
        [WRITES],
      );
      result[kind] = {
        walBytesPerWrite: bytes / WRITES,
        backendCpuUs,
        processCpuUs: (own.user + own.system) / WRITES,
        statements: rows.map((r) => ({
          query: r.query.replace(/\s+/g, ' ').slice(0, 110),
          calls: Number(r.calls),
          blocks: Number(r.blocks) / WRITES,
          dirtied: Number(r.dirtied) / WRITES,
          walRecords: Number(r.wal_records) / WRITES,
          walFpi: Number(r.wal_fpi) / WRITES,
          walBytes: Number(r.wal_bytes) / WRITES,
        })),
      };
    }
    return result;
  } finally {
    await app.close();
  }
}

function print(side: string, costs: Record<string, KindCost>): void {
  for (const [kind, cost] of Object.entries(costs)) {
    const sum = (f: (s: StatementCost) => number) => cost.statements.reduce((a, s) => a + f(s), 0);
    console.log(
      `${kind} history ${side}: WAL ${cost.walBytesPerWrite.toFixed(0)} bytes/write (statements ${sum((s) => s.walBytes).toFixed(0)} bytes, ${sum((s) => s.walRecords).toFixed(2)} records, ${sum((s) => s.walFpi).toFixed(2)} FPI); buffers ${sum((s) => s.blocks).toFixed(1)} touched, ${sum((s) => s.dirtied).toFixed(2)} dirtied; CPU ${cost.backendCpuUs.toFixed(0)} µs backends, ${cost.processCpuUs.toFixed(0)} µs service and client`,
    );
    for (const s of cost.statements) {
      console.log(
        `  ${s.blocks.toFixed(1).padStart(6)} buf ${s.dirtied.toFixed(2).padStart(5)} dirt ${s.walRecords.toFixed(2).padStart(5)} rec ${s.walFpi.toFixed(2).padStart(5)} fpi ${s.walBytes.toFixed(0).padStart(6)} B  ${s.query}`,
      );
    }
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tenantry-history-wal-'));
  chmodSync(dir, 0o755);
  const data = join(dir, 'data');
  const port = await freePort();
  let server = await startServer(data, port);
  try {
    const setup = new pg.Client({ connectionString: server.adminUrl });
    await setup.connect();
    await setup.query(`alter system set shared_preload_libraries = 'pg_stat_statements'`);
    await setup.end();
    await server.stop();
    server = await startServer(data, port);
    const url = await ensureDatabase(server.adminUrl, 'tenantry_history_wal');
    const admin = new pg.Pool({ connectionString: url, max: 1 });
    // An idle connection the server ends (57P01) is replaced at the next query, not an uncaught 'error' event.
    admin.on('error', (err) => console.error(`history-wal: an idle database connection closed (${err.message})`));
    await admin.query('create extension if not exists pg_stat_statements');
    try {
      const on = await measureSide(url, admin, true);
      const off = await measureSide(url, admin, false);
      console.log(`${WRITES} writes of each kind, one at a time, after ${WARMUP} warm-up writes and a checkpoint`);
      print('on', on);
      print('off', off);
      for (const kind of Object.keys(on)) {
        console.log(
          `${kind}: WAL per write history on ${on[kind]!.walBytesPerWrite.toFixed(0)} B, off ${off[kind]!.walBytesPerWrite.toFixed(0)} B: on/off ${(on[kind]!.walBytesPerWrite / off[kind]!.walBytesPerWrite).toFixed(3)}`,
        );
      }
    } finally {
      await admin.end();
    }
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
