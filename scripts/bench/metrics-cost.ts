import type { BenchOptions } from './options.ts';
import type { ResultRow } from './report.ts';
import {
  measureLogged,
  pairRows,
  WIDGET_LIST_PATH,
  widgetCreate,
  widgetList,
  withTwoServices,
} from './two-services.ts';
import { freePort } from '../../test/helpers/ports.ts';

/** Issue 32, point 6: with metrics on, list and create keep at least this share of their req/s with metrics off. */
const TARGET = 0.95;
/** How often the metrics listener is scraped while the bench runs (a common Prometheus scrape_interval). */
const SCRAPE_SECONDS = 15;

/**
 * `--only metrics-cost`: what the Prometheus metrics cost the request path. Two service processes
 * (two-services.ts), identical but for TENANTRY_METRICS_PORT: one with no metrics listener, one
 * with it on a free port and scraped every 15 s as Prometheus would. List and create are measured
 * on both in alternating rounds (off on, on off, ...). Reported: each side's req/s and latency,
 * and on/off with the target ≥ 0.95. The metrics side is checked to have counted the requests, so
 * a listener that recorded nothing cannot pass for a cheap one.
 */
export async function measureMetricsCostGroup(
  options: BenchOptions,
  databaseUrl: string,
  runId: string,
  log: (line: string) => void,
  load: () => string,
): Promise<ResultRow[]> {
  const metricsPort = await freePort();
  const spec = {
    group: 'metrics',
    baseline: { name: 'service-metrics-off', runSuffix: 'moff', env: { TENANTRY_METRICS_PORT: '' } },
    service: { name: 'service-metrics-on', runSuffix: 'mon', env: { TENANTRY_METRICS_PORT: String(metricsPort) } },
    checkPath: WIDGET_LIST_PATH,
  };
  return withTwoServices(options, databaseUrl, runId, log, spec, async ({ baseline, service, plan, pairOf }) => {
    const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    const scrape = async () => {
      const answer = await fetch(metricsUrl);
      if (answer.status !== 200) throw new Error(`GET ${metricsUrl} answered ${answer.status}`);
      return answer.text();
    };
    await scrape();
    // Stopped before the two processes are (withTwoServices stops them once this returns or throws).
    const scraper = setInterval(
      () => void scrape().catch((err: Error) => log(`  metrics scrape failed: ${err.message}`)),
      SCRAPE_SECONDS * 1000,
    );
    try {
      log(
        `metrics-cost: metrics off on port ${baseline.service.port}, metrics on on port ${service.service.port} (listener ${metricsUrl}, scraped every ${SCRAPE_SECONDS} s); load average ${load()}`,
      );
      const rows: ResultRow[] = [];
      for (const [operation, target] of [
        ['list', widgetList],
        ['create', widgetCreate],
      ] as const) {
        const pair = pairOf(`${operation}-metrics-on`, { service: target(service), baseline: target(baseline) });
        const counted = requestsCounted(await scrape());
        const { figures, ratio } = await measureLogged(pair, plan, `${operation} with metrics on and off`, load);
        // The metrics side recorded what it answered: its request counter grew by at least the requests measured.
        const recorded = requestsCounted(await scrape()) - counted;
        if (recorded < figures.service.requests)
          throw new Error(
            `metrics-cost: the metrics side counted ${recorded} requests during ${operation}, fewer than the ${figures.service.requests} it answered`,
          );
        log(
          `  ${operation}: metrics on ${figures.service.rps.toFixed(0)} req/s, off ${figures.baseline.rps.toFixed(0)} req/s: ${ratio.toFixed(3)}× (target ≥ ${TARGET}); ${recorded} requests counted by tenantry_http_request_duration_seconds`,
        );
        rows.push(
          ...pairRows(
            { service: pair.name, baseline: `${operation}-metrics-off` },
            figures,
            ratio,
            `${operation} with metrics off (same run, alternating rounds)`,
            { min: TARGET, words: `≥ ${TARGET}× metrics off` },
          ),
        );
      }
      return rows;
    } finally {
      clearInterval(scraper);
    }
  });
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
