import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type ServerProcess } from './child.ts';
import { measurePair, type Pair, type Plan } from './throughput.ts';
import type { Target } from './load.ts';
import { signIn } from './login.ts';
import { send } from './http.ts';
import { BENCH_PASSWORD, type SeedInfo } from './seed.ts';
import type { BenchOptions } from './options.ts';
import type { ServiceSettings } from './protocol.ts';
import type { ResultRow } from './report.ts';

const LIST_PATH = '/api/v1/testkit/widgets?limit=20';
const CREATE_PATH = '/api/v1/testkit/widgets';
const CREATE_BODY = '{"name":"bench-[<id>]","size":7,"color":"blue","note":"created by the benchmark"}';

/**
 * `--only prepared-statements`: what `database.prepared_statements: unnamed` costs the request path
 * (issue 49: the setting for PgBouncer before 1.21, which cannot carry named statements). Two
 * service processes (service.ts, role all, each with its own seeded tenants in the run's database),
 * identical but for TENANTRY_DATABASE_PREPARED_STATEMENTS: `named` (the default) and `unnamed`,
 * both on PostgreSQL directly, so the figure is the statements' own cost (parsed and planned on
 * every run), not a pooler's. List and create are measured on both in alternating rounds
 * (throughput.ts), so load that drifts during the run falls on both sides alike. Reported: each
 * side's req/s and latency, and unnamed/named. There is no target: the ratio is what an operator
 * pays for running behind such a pooler (docs/operations.md).
 */
export async function measurePreparedStatementsGroup(
  options: BenchOptions,
  databaseUrl: string,
  runId: string,
  log: (line: string) => void,
  load: () => string,
): Promise<ResultRow[]> {
  const filesDir = mkdtempSync(join(tmpdir(), 'tenantry-bench-statements-'));
  const servers: ServerProcess[] = [];
  try {
    const settings = (side: string): ServiceSettings => ({
      databaseUrl,
      poolSize: options.poolSize,
      runId: `${runId}${side}`,
      rowsPerTenant: options.rowsPerTenant,
      notifications: 1,
      wrongPasswordAccounts: 1,
      filesDir: join(filesDir, side),
      maxUploadBytes: 1024 * 1024,
    });
    // Started one after the other: each seeds its tenants and runs its migrations check alone.
    const named = await startServer('service-named', './service.ts', settings('psn'), [], {
      TENANTRY_DATABASE_PREPARED_STATEMENTS: 'named',
    });
    servers.push(named);
    const unnamed = await startServer('service-unnamed', './service.ts', settings('psu'), [], {
      TENANTRY_DATABASE_PREPARED_STATEMENTS: 'unnamed',
    });
    servers.push(unnamed);
    const sides = await Promise.all(
      [named, unnamed].map(async (service) => {
        const seed = service.ready.seed as SeedInfo;
        const host = seed.tenants[0]!.host;
        const cookie = await signIn(service.port, host, seed.email, BENCH_PASSWORD);
        const check = await send(service.port, { method: 'GET', path: LIST_PATH, host, headers: { cookie } });
        if (check.status !== 200)
          throw new Error(`${service.name}: GET ${LIST_PATH} answered ${check.status}: ${check.body.slice(0, 300)}`);
        return { host, cookie, at: `http://127.0.0.1:${service.port}` };
      }),
    );
    const [namedSide, unnamedSide] = sides as [(typeof sides)[number], (typeof sides)[number]];
    log(`prepared-statements: named on port ${named.port}, unnamed on port ${unnamed.port}; load average ${load()}`);
    const plan: Plan = {
      connections: options.connections,
      warmupSeconds: options.warmupSeconds,
      seconds: options.seconds,
      rounds: options.rounds,
      log,
    };
    const pids = { service: unnamed.pid, baseline: named.pid };
    const settle = async () => {
      const a = await unnamed.ask({ type: 'drain' }, 'drained', 150_000);
      const b = await named.ask({ type: 'drain' }, 'drained', 150_000);
      return { ms: a.ms + b.ms, eventsMs: Math.max(a.eventsMs, b.eventsMs) };
    };
    const request = (side: typeof namedSide, method: 'GET' | 'POST'): Target =>
      method === 'GET'
        ? { url: side.at + LIST_PATH, method, headers: { host: side.host, cookie: side.cookie } }
        : {
            url: side.at + CREATE_PATH,
            method,
            headers: { host: side.host, cookie: side.cookie, 'content-type': 'application/json' },
            body: CREATE_BODY,
          };
    const pairs: Pair[] = [
      { name: 'list-unnamed', pids, settle, service: request(unnamedSide, 'GET'), baseline: request(namedSide, 'GET') },
      {
        name: 'create-unnamed',
        pids,
        settle,
        service: request(unnamedSide, 'POST'),
        baseline: request(namedSide, 'POST'),
      },
    ];
    const rows: ResultRow[] = [];
    for (const pair of pairs) {
      const operation = pair.name.replace('-unnamed', '');
      log(
        `${operation} with unnamed and named statements: ${options.connections} connections, warm-up ${options.warmupSeconds} s, ${options.rounds} × ${options.seconds} s each side, alternating (load average ${load()})`,
      );
      const figures = await measurePair(pair, plan);
      const ratio = figures.service.rps / figures.baseline.rps;
      log(
        `  ${operation}: unnamed ${figures.service.rps.toFixed(0)} req/s, named ${figures.baseline.rps.toFixed(0)} req/s: ${ratio.toFixed(3)}×`,
      );
      const pick = (f: typeof figures.service) => ({
        rps: f.rps,
        p50_ms: f.p50_ms,
        p99_ms: f.p99_ms,
        samples: f.requests,
      });
      rows.push({
        name: pair.name,
        ...pick(figures.service),
        ratio_to_baseline: ratio,
        baseline: `${operation} with named statements (same run, alternating rounds)`,
      });
      rows.push({ name: `${operation}-named`, ...pick(figures.baseline), ratio_to_baseline: 1 });
    }
    return rows;
  } finally {
    await Promise.allSettled(servers.map((s) => s.stop()));
    rmSync(filesDir, { recursive: true, force: true });
  }
}
