import type { Target } from './load.ts';
import type { BenchOptions } from './options.ts';
import type { ResultRow } from './report.ts';
import { measureLogged, pairRows, withTwoServices, type Side } from './two-services.ts';

const LIST_PATH = '/api/v1/testkit/widgets?limit=20';
const CREATE_PATH = '/api/v1/testkit/widgets';
const CREATE_BODY = '{"name":"bench-[<id>]","size":7,"color":"blue","note":"created by the benchmark"}';

/**
 * `--only prepared-statements`: what `database.prepared_statements: unnamed` costs the request path
 * (issue 49: the setting for PgBouncer before 1.21, which cannot carry named statements). Two
 * service processes (two-services.ts), identical but for TENANTRY_DATABASE_PREPARED_STATEMENTS:
 * `named` (the default) and `unnamed`, both on PostgreSQL directly, so the figure is the
 * statements' own cost (parsed and planned on every run), not a pooler's. List and create are
 * measured on both in alternating rounds. Reported: each side's req/s and latency, and
 * unnamed/named. There is no target: the ratio is what an operator pays for running behind such a
 * pooler (docs/operations.md).
 */
export async function measurePreparedStatementsGroup(
  options: BenchOptions,
  databaseUrl: string,
  runId: string,
  log: (line: string) => void,
  load: () => string,
): Promise<ResultRow[]> {
  const spec = {
    group: 'statements',
    baseline: { name: 'service-named', runSuffix: 'psn', env: { TENANTRY_DATABASE_PREPARED_STATEMENTS: 'named' } },
    service: { name: 'service-unnamed', runSuffix: 'psu', env: { TENANTRY_DATABASE_PREPARED_STATEMENTS: 'unnamed' } },
    checkPath: LIST_PATH,
  };
  return withTwoServices(options, databaseUrl, runId, log, spec, async ({ baseline, service, plan, pairOf }) => {
    log(
      `prepared-statements: named on port ${baseline.service.port}, unnamed on port ${service.service.port}; load average ${load()}`,
    );
    const request = (side: Side, method: 'GET' | 'POST'): Target =>
      method === 'GET'
        ? { url: side.at + LIST_PATH, method, headers: { host: side.host, cookie: side.cookie } }
        : {
            url: side.at + CREATE_PATH,
            method,
            headers: { host: side.host, cookie: side.cookie, 'content-type': 'application/json' },
            body: CREATE_BODY,
          };
    const rows: ResultRow[] = [];
    for (const [operation, method] of [
      ['list', 'GET'],
      ['create', 'POST'],
    ] as const) {
      const pair = pairOf(`${operation}-unnamed`, {
        service: request(service, method),
        baseline: request(baseline, method),
      });
      const { figures, ratio } = await measureLogged(
        pair,
        plan,
        `${operation} with unnamed and named statements`,
        load,
      );
      log(
        `  ${operation}: unnamed ${figures.service.rps.toFixed(0)} req/s, named ${figures.baseline.rps.toFixed(0)} req/s: ${ratio.toFixed(3)}×`,
      );
      rows.push(
        ...pairRows(
          { service: pair.name, baseline: `${operation}-named` },
          figures,
          ratio,
          `${operation} with named statements (same run, alternating rounds)`,
        ),
      );
    }
    return rows;
  });
}
