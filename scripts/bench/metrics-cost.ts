import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type ServerProcess } from './child.ts';
import { measurePair, type Pair, type Plan } from './throughput.ts';
import { signIn } from './login.ts';
import { send } from './http.ts';
import { BENCH_PASSWORD, type SeedInfo } from './seed.ts';
import type { BenchOptions } from './options.ts';
import type { ServiceSettings } from './protocol.ts';
import type { ResultRow } from './report.ts';
import { freePort } from '../../test/helpers/ports.ts';

const LIST_PATH = '/api/v1/testkit/widgets?limit=20';
const CREATE_PATH = '/api/v1/testkit/widgets';
const CREATE_BODY = '{"name":"bench-[<id>]","size":7,"color":"blue","note":"created by the benchmark"}';
/** Issue 32, point 6: with metrics on, list and create keep at least this share of their req/s with metrics off. */
const TARGET = 0.95;
/** How often the metrics listener is scraped while the bench runs (a common Prometheus scrape_interval). */
const SCRAPE_SECONDS = 15;

/**
 * `--only metrics-cost`: what the Prometheus metrics cost the request path. Two service processes
 * (service.ts, role all, each with its own seeded tenants in the run's database), identical but for
 * TENANTRY_METRICS_PORT: one with no metrics listener, one with it on a free port and scraped every
 * 15 s as Prometheus would. List and create are measured on both in alternating rounds (off on,
 * on off, ...; throughput.ts), so load that drifts during the run (other work on the machine)
 * falls on both sides alike. Reported: each side's req/s and latency, and on/off with the target
 * ≥ 0.95. The metrics side is checked to have counted the requests, so a listener that recorded
 * nothing cannot pass for a cheap one.
 */
export async function measureMetricsCostGroup(
  options: BenchOptions,
  databaseUrl: string,
  runId: string,
  log: (line: string) => void,
  load: () => string,
): Promise<ResultRow[]> {
  const filesDir = mkdtempSync(join(tmpdir(), 'tenantry-bench-metrics-'));
  const servers: ServerProcess[] = [];
  let scraper: NodeJS.Timeout | undefined;
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
    const metricsPort = await freePort();
    // Started one after the other: each seeds its tenants and runs its migrations check alone.
    const off = await startServer('service-metrics-off', './service.ts', settings('moff'), [], {
      TENANTRY_METRICS_PORT: '',
    });
    servers.push(off);
    const on = await startServer('service-metrics-on', './service.ts', settings('mon'), [], {
      TENANTRY_METRICS_PORT: String(metricsPort),
    });
    servers.push(on);
    const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    const scrape = async () => {
      const answer = await fetch(metricsUrl);
      if (answer.status !== 200) throw new Error(`GET ${metricsUrl} answered ${answer.status}`);
      return answer.text();
    };
    await scrape();
    scraper = setInterval(
      () => void scrape().catch((err: Error) => log(`  metrics scrape failed: ${err.message}`)),
      SCRAPE_SECONDS * 1000,
    );

    const sides = await Promise.all(
      [off, on].map(async (service) => {
        const seed = service.ready.seed as SeedInfo;
        const host = seed.tenants[0]!.host;
        const cookie = await signIn(service.port, host, seed.email, BENCH_PASSWORD);
        const check = await send(service.port, { method: 'GET', path: LIST_PATH, host, headers: { cookie } });
        if (check.status !== 200)
          throw new Error(`${service.name}: GET ${LIST_PATH} answered ${check.status}: ${check.body.slice(0, 300)}`);
        return { service, host, cookie, at: `http://127.0.0.1:${service.port}` };
      }),
    );
    const [offSide, onSide] = sides as [(typeof sides)[number], (typeof sides)[number]];
    log(
      `metrics-cost: metrics off on port ${off.port}, metrics on on port ${on.port} (listener ${metricsUrl}, scraped every ${SCRAPE_SECONDS} s); load average ${load()}`,
    );

    const plan: Plan = {
      connections: options.connections,
      warmupSeconds: options.warmupSeconds,
      seconds: options.seconds,
      rounds: options.rounds,
      log,
    };
    const pids = { service: on.pid, baseline: off.pid };
    // Both services run a worker on the one database: each settles once every event of the run is handled.
    const settle = async () => {
      const a = await on.ask({ type: 'drain' }, 'drained', 150_000);
      const b = await off.ask({ type: 'drain' }, 'drained', 150_000);
      return { ms: a.ms + b.ms, eventsMs: Math.max(a.eventsMs, b.eventsMs) };
    };
    const pairs: Pair[] = [
      {
        name: 'list-metrics-on',
        pids,
        settle,
        service: { url: onSide.at + LIST_PATH, method: 'GET', headers: { host: onSide.host, cookie: onSide.cookie } },
        baseline: {
          url: offSide.at + LIST_PATH,
          method: 'GET',
          headers: { host: offSide.host, cookie: offSide.cookie },
        },
      },
      {
        name: 'create-metrics-on',
        pids,
        settle,
        service: {
          url: onSide.at + CREATE_PATH,
          method: 'POST',
          headers: { host: onSide.host, cookie: onSide.cookie, 'content-type': 'application/json' },
          body: CREATE_BODY,
        },
        baseline: {
          url: offSide.at + CREATE_PATH,
          method: 'POST',
          headers: { host: offSide.host, cookie: offSide.cookie, 'content-type': 'application/json' },
          body: CREATE_BODY,
        },
      },
    ];

    const rows: ResultRow[] = [];
    for (const pair of pairs) {
      const operation = pair.name.replace('-metrics-on', '');
      log(
        `${operation} with metrics on and off: ${options.connections} connections, warm-up ${options.warmupSeconds} s, ${options.rounds} × ${options.seconds} s each side, alternating (load average ${load()})`,
      );
      const counted = requestsCounted(await scrape());
      const figures = await measurePair(pair, plan);
      // The metrics side recorded what it answered: its request counter grew by at least the requests measured.
      const recorded = requestsCounted(await scrape()) - counted;
      if (recorded < figures.service.requests)
        throw new Error(
          `metrics-cost: the metrics side counted ${recorded} requests during ${operation}, fewer than the ${figures.service.requests} it answered`,
        );
      const ratio = figures.service.rps / figures.baseline.rps;
      log(
        `  ${operation}: metrics on ${figures.service.rps.toFixed(0)} req/s, off ${figures.baseline.rps.toFixed(0)} req/s: ${ratio.toFixed(3)}× (target ≥ ${TARGET}); ${recorded} requests counted by tenantry_http_request_duration_seconds`,
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
        baseline: `${operation} with metrics off (same run, alternating rounds)`,
        target: `≥ ${TARGET}× metrics off`,
        met: ratio >= TARGET,
      });
      rows.push({ name: `${operation}-metrics-off`, ...pick(figures.baseline), ratio_to_baseline: 1 });
    }
    return rows;
  } finally {
    if (scraper) clearInterval(scraper);
    await Promise.allSettled(servers.map((s) => s.stop()));
    rmSync(filesDir, { recursive: true, force: true });
  }
}

/** The sum of tenantry_http_request_duration_seconds_count over its label sets, from a scrape. */
function requestsCounted(exposition: string): number {
  let total = 0;
  for (const line of exposition.split('\n')) {
    if (line.startsWith('tenantry_http_request_duration_seconds_count'))
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}
