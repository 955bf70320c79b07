import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type ServerProcess } from './child.ts';
import { measurePair, type Pair, type PairFigures, type Plan } from './throughput.ts';
import { signIn } from './login.ts';
import { send } from './http.ts';
import { BENCH_PASSWORD, type SeedInfo } from './seed.ts';
import type { BenchOptions } from './options.ts';
import type { ServiceSettings } from './protocol.ts';
import type { ResultRow } from './report.ts';
import type { Target } from './load.ts';

/**
 * The groups that measure what one setting costs (prepared statements, history, metrics) share
 * their frame: two service processes (service.ts, role all, each with its own seeded tenants in the
 * run's database), identical but for the setting's environment, each signed in on its first
 * tenant and checked to answer a list; their operations measured in alternating rounds
 * (throughput.ts), so load that drifts during the run falls on both sides alike.
 */

/** One of the two processes: how it is named, the suffix of its run id, and its environment. */
export interface SideSpec {
  name: string;
  runSuffix: string;
  env: Record<string, string>;
}

export interface TwoServicesSpec {
  /** The temporary files folder's prefix. */
  group: string;
  /** The side without the setting (the ratio's denominator), then the side with it. */
  baseline: SideSpec;
  service: SideSpec;
  /** The path (with its query) each side must answer 200 before anything is measured. */
  checkPath: string;
  /** Seeded rows per tenant (default the bench's option). */
  rowsPerTenant?: number;
}

/** A started, signed-in side. */
export interface Side {
  service: ServerProcess;
  tenantId: string;
  host: string;
  cookie: string;
  /** `http://127.0.0.1:<port>` */
  at: string;
}

export interface TwoServices {
  baseline: Side;
  service: Side;
  plan: Plan;
  /** What every pair of the group shares: the two pids, and a settle that drains both workers (both run one on the one database). */
  pairOf(name: string, targets: Pick<Pair, 'service' | 'baseline'>): Pair;
}

/**
 * Starts the two processes one after the other (each seeds its tenants and runs its migrations
 * check alone), signs in on both, runs `measure`, and stops both and removes their files whatever
 * happens.
 */
export async function withTwoServices<T>(
  options: BenchOptions,
  databaseUrl: string,
  runId: string,
  log: (line: string) => void,
  spec: TwoServicesSpec,
  measure: (two: TwoServices) => Promise<T>,
): Promise<T> {
  const filesDir = mkdtempSync(join(tmpdir(), `tenantry-bench-${spec.group}-`));
  const servers: ServerProcess[] = [];
  try {
    const settings = (side: string): ServiceSettings => ({
      databaseUrl,
      poolSize: options.poolSize,
      runId: `${runId}${side}`,
      rowsPerTenant: spec.rowsPerTenant ?? options.rowsPerTenant,
      notifications: 1,
      wrongPasswordAccounts: 1,
      filesDir: join(filesDir, side),
      maxUploadBytes: 1024 * 1024,
    });
    for (const side of [spec.baseline, spec.service])
      servers.push(await startServer(side.name, './service.ts', settings(side.runSuffix), [], side.env));
    const [baseline, service] = (await Promise.all(servers.map((s) => signedIn(s, spec.checkPath)))) as [Side, Side];
    const plan = planOf(options, log);
    const pids = { service: service.service.pid, baseline: baseline.service.pid };
    const settle = async () => {
      const a = await service.service.ask({ type: 'drain' }, 'drained', 150_000);
      const b = await baseline.service.ask({ type: 'drain' }, 'drained', 150_000);
      return { ms: a.ms + b.ms, eventsMs: Math.max(a.eventsMs, b.eventsMs) };
    };
    return await measure({ baseline, service, plan, pairOf: (name, targets) => ({ name, pids, settle, ...targets }) });
  } finally {
    await Promise.allSettled(servers.map((s) => s.stop()));
    rmSync(filesDir, { recursive: true, force: true });
  }
}

/** How long and how hard each side of a pair is measured: the bench's options. */
export const planOf = (options: BenchOptions, log: (line: string) => void): Plan => ({
  connections: options.connections,
  warmupSeconds: options.warmupSeconds,
  seconds: options.seconds,
  rounds: options.rounds,
  log,
});

async function signedIn(service: ServerProcess, checkPath: string): Promise<Side> {
  const seed = service.ready.seed as SeedInfo;
  const tenant = seed.tenants[0]!;
  const cookie = await signIn(service.port, tenant.host, seed.email, BENCH_PASSWORD);
  const check = await send(service.port, { method: 'GET', path: checkPath, host: tenant.host, headers: { cookie } });
  if (check.status !== 200)
    throw new Error(`${service.name}: GET ${checkPath} answered ${check.status}: ${check.body.slice(0, 300)}`);
  return { service, tenantId: tenant.id, host: tenant.host, cookie, at: `http://127.0.0.1:${service.port}` };
}

/** Logs what is about to be measured, then measures the pair; returns its figures and the service/baseline ratio. */
export async function measureLogged(
  pair: Pair,
  plan: Plan,
  words: string,
  load: () => string,
): Promise<{ figures: PairFigures; ratio: number }> {
  plan.log(
    `${words}: ${plan.connections} connections, warm-up ${plan.warmupSeconds} s, ${plan.rounds} × ${plan.seconds} s each side, alternating (load average ${load()})`,
  );
  const figures = await measurePair(pair, plan);
  return { figures, ratio: figures.service.rps / figures.baseline.rps };
}

/**
 * The two rows of bench-results.json one measured pair gives: the service side, with its ratio to
 * the baseline side (and the target, when the group has one), then the baseline side at 1.
 */
export function pairRows(
  names: { service: string; baseline: string },
  figures: PairFigures,
  ratio: number,
  baselineWords: string,
  target?: { min: number; words: string },
): ResultRow[] {
  const pick = (f: PairFigures['service']) => ({ rps: f.rps, p50_ms: f.p50_ms, p99_ms: f.p99_ms, samples: f.requests });
  return [
    {
      name: names.service,
      ...pick(figures.service),
      ratio_to_baseline: ratio,
      baseline: baselineWords,
      ...(target ? { target: target.words, met: ratio >= target.min } : {}),
    },
    { name: names.baseline, ...pick(figures.baseline), ratio_to_baseline: 1 },
  ];
}

/** The test kit's widget list and create, the request pair the cost groups measure on each side. */
export const WIDGET_LIST_PATH = '/api/v1/testkit/widgets?limit=20';
const WIDGET_CREATE_PATH = '/api/v1/testkit/widgets';
const WIDGET_CREATE_BODY = '{"name":"bench-[<id>]","size":7,"color":"blue","note":"created by the benchmark"}';
export const widgetList = (side: Side): Target => ({
  url: side.at + WIDGET_LIST_PATH,
  method: 'GET',
  headers: { host: side.host, cookie: side.cookie },
});
export const widgetCreate = (side: Side): Target => ({
  url: side.at + WIDGET_CREATE_PATH,
  method: 'POST',
  headers: { host: side.host, cookie: side.cookie, 'content-type': 'application/json' },
  body: WIDGET_CREATE_BODY,
});
