import type { BenchOptions } from './options.ts';
import type { ResultRow } from './report.ts';
import { subscribeBenchTenant } from './plan.ts';
import {
  measureLogged,
  pairRows,
  WIDGET_LIST_PATH,
  widgetCreate,
  widgetList,
  withTwoServices,
} from './two-services.ts';

/** Issue 47, point 7: on a plan with features and limits, list and create keep this share of their req/s without. */
const TARGET = 0.95;
/** Every feature the installation declares (as `--plan` grants them). */
const FEATURES = ['webhook.endpoints', 'file.public_links'];

/**
 * `--only plan-cost`: what a plan costs the request path, in one run. Two service processes
 * (two-services.ts), identical; once both are up, the tenant of one is put on a plan with every
 * feature and a bound on every limit (plan.ts), so each of its requests resolves the subscription
 * and the plan in its opening statement, while the other tenant has no subscription (everything
 * allowed, as today). List and create are measured on both in alternating rounds; the ratio is
 * on the plan / without, target ≥ 0.95. `--plan` compares two separate runs instead, whose
 * services drift apart by more than the cost.
 */
export async function measurePlanCostGroup(
  options: BenchOptions,
  databaseUrl: string,
  runId: string,
  log: (line: string) => void,
  load: () => string,
): Promise<ResultRow[]> {
  const spec = {
    group: 'plan',
    baseline: { name: 'service-no-plan', runSuffix: 'pnone', env: {} },
    service: { name: 'service-on-plan', runSuffix: 'pplan', env: {} },
    checkPath: WIDGET_LIST_PATH,
  };
  return withTwoServices(options, databaseUrl, runId, log, spec, async ({ baseline, service, plan, pairOf }) => {
    await subscribeBenchTenant(databaseUrl, service.tenantId, FEATURES);
    log(
      `plan-cost: no subscription on port ${baseline.service.port}, on a plan with every feature and a bound on every limit on port ${service.service.port}; load average ${load()}`,
    );
    const rows: ResultRow[] = [];
    for (const [operation, target] of [
      ['list', widgetList],
      ['create', widgetCreate],
    ] as const) {
      const pair = pairOf(`${operation}-on-plan`, { service: target(service), baseline: target(baseline) });
      const { figures, ratio } = await measureLogged(pair, plan, `${operation} on a plan and without`, load);
      log(
        `  ${operation}: on a plan ${figures.service.rps.toFixed(0)} req/s, without ${figures.baseline.rps.toFixed(0)} req/s: ${ratio.toFixed(3)}× (target ≥ ${TARGET})`,
      );
      rows.push(
        ...pairRows(
          { service: pair.name, baseline: `${operation}-no-plan` },
          figures,
          ratio,
          `${operation} with no subscription (same run, alternating rounds)`,
          { min: TARGET, words: `≥ ${TARGET}× without a plan` },
        ),
      );
    }
    return rows;
  });
}
