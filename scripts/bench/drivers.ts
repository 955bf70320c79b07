import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SETTINGS_ENV } from './protocol.ts';
import type { ResultRow } from './report.ts';
import type { BenchOptions } from './options.ts';
import type { BenchDatabase } from './database.ts';
import type { SeedInfo } from './seed.ts';
import { hashSecret } from '../../framework/access/session-cookie.ts';
import { DRIVER_VARIANTS, type DriverLoadResult, type DriverLoadSettings, type DriverVariant } from './driver-load.ts';

/**
 * The driver comparison (`--only drivers`): the list request's database work — BEGIN, the opening
 * statement, the permission-checked list, COMMIT — run by each way of reaching PostgreSQL, in the
 * same run, on the same database and rows, one side at a time in its own process, the order
 * rotating from round to round so that drifting machine load falls on every side. Reported per
 * side: the median over rounds of transactions/s, p50 and p99, and the CPU per transaction of the
 * client process and of PostgreSQL, with the ratio to pg-own-socket (the request path's transport).
 */

export interface DriverPlan {
  databaseUrl: string;
  poolSize: number;
  connections: number;
  warmupSeconds: number;
  seconds: number;
  rounds: number;
  tenantId: string;
  sessionHash: string;
  postmasterPid?: number;
  log(line: string): void;
}

interface RoundFigures extends DriverLoadResult {
  rps: number;
}

function runSide(settings: DriverLoadSettings): Promise<DriverLoadResult> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(new URL('./driver-load.ts', import.meta.url)), [], {
      env: { ...process.env, [SETTINGS_ENV]: JSON.stringify(settings) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let answered = false;
    child.on('message', (message: { type: string; result?: DriverLoadResult; error?: string }) => {
      answered = true;
      if (message.type === 'driver-result') resolve(message.result!);
      else reject(new Error(`driver ${settings.variant}: ${message.error}`));
    });
    child.once(
      'exit',
      (code) => answered || reject(new Error(`driver ${settings.variant} exited (code ${code}) without a result`)),
    );
  });
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

export async function measureDrivers(
  plan: DriverPlan,
  variants: readonly DriverVariant[] = DRIVER_VARIANTS,
): Promise<ResultRow[]> {
  const rounds = new Map<DriverVariant, RoundFigures[]>(variants.map((v) => [v, []]));
  for (let round = 0; round < plan.rounds; round++) {
    // Rotate the order: each side runs first, in the middle and last across rounds.
    const order = variants.map((_, i) => variants[(i + round) % variants.length]!);
    for (const variant of order) {
      const result = await runSide({
        variant,
        databaseUrl: plan.databaseUrl,
        poolSize: plan.poolSize,
        connections: plan.connections,
        warmupSeconds: plan.warmupSeconds,
        seconds: plan.seconds,
        tenantId: plan.tenantId,
        sessionHash: plan.sessionHash,
        ...(plan.postmasterPid ? { postmasterPid: plan.postmasterPid } : {}),
      });
      const rps = result.transactions / result.seconds;
      const figures = { ...result, rps };
      rounds.get(variant)!.push(figures);
      plan.log(
        `  ${variant.padEnd(15)} round ${round + 1}: ${rps.toFixed(0)} tx/s, p50 ${result.p50_ms.toFixed(1)} ms, p99 ${result.p99_ms.toFixed(1)} ms, ` +
          `CPU per tx: client ${result.cpuUs.toFixed(0)} µs${Number.isNaN(figures.pgCpuUs) ? '' : `, PostgreSQL ${figures.pgCpuUs.toFixed(0)} µs`}`,
      );
    }
  }
  const reference = median(rounds.get('pg-own-socket')?.map((r) => r.rps) ?? [Number.NaN]);
  return variants.map((variant): ResultRow => {
    const figures = rounds.get(variant)!;
    const rps = median(figures.map((f) => f.rps));
    return {
      name: `driver-${variant}`,
      rps,
      p50_ms: median(figures.map((f) => f.p50_ms)),
      p99_ms: median(figures.map((f) => f.p99_ms)),
      ratio_to_baseline: rps / reference,
      baseline: 'driver-pg-own-socket (median tx/s)',
      samples: figures.reduce((n, f) => n + f.transactions, 0),
      client_cpu_us: median(figures.map((f) => f.cpuUs)),
      ...(plan.postmasterPid ? { postgres_cpu_us: median(figures.map((f) => f.pgCpuUs)) } : {}),
      rounds_rps: figures.map((f) => Math.round(f.rps)),
    };
  });
}

/** The run's hook: the group with the run's options, signed in as the bench user (its cookie). */
export async function measureDriverGroup(
  options: BenchOptions,
  db: BenchDatabase,
  seed: SeedInfo,
  cookie: string,
  log: (line: string) => void,
  load: () => string,
): Promise<ResultRow[]> {
  log(
    `drivers: ${DRIVER_VARIANTS.join(', ')}; ${options.connections} callers, pool ${options.poolSize}, warm-up ${options.warmupSeconds} s, ${options.rounds} × ${options.seconds} s each, order rotating (load average ${load()})`,
  );
  return measureDrivers({
    databaseUrl: db.url,
    poolSize: options.poolSize,
    connections: options.connections,
    warmupSeconds: options.warmupSeconds,
    seconds: options.seconds,
    rounds: options.rounds,
    tenantId: seed.tenants[0]!.id,
    sessionHash: hashSecret(decodeURIComponent(cookie.slice(cookie.indexOf('=') + 1))).toString('hex'),
    ...(db.postmasterPid ? { postmasterPid: db.postmasterPid } : {}),
    log,
  });
}
