import { send } from './http.ts';
import { signIn } from './login.ts';
import { measurePair, type Pair, type Plan } from './throughput.ts';
import type { ResultRow } from './report.ts';
import { seedTasks } from './tasks-seed.ts';

/**
 * The list-filtered scenario (issue 44, point 11): the task list as its acceptance asks it,
 * filtered, sorted by two keys, one reference expanded and the fields selected, beside the bare
 * baseline running the same statement (scripts/bench/baseline-filtered.ts) on copies of the same
 * rows, with the same connections and pool size as the plain list.
 */
export const FILTERED_LIST_PATH =
  '/api/v1/task/tasks?status=in.(open,acknowledged)&deadline=lt.now&priority=gte.high&expand=assignee&fields=title,deadline,assignee.displayName&sort=-priority,deadline';

export interface FilteredListSetup {
  databaseUrl: string;
  runId: string;
  /** The first seeded tenant: its id and host. */
  tenant: { id: string; host: string };
  password: string;
  tasks: number;
  servicePort: number;
  baselinePort: number;
  pids: Pair['pids'];
  settle: Pair['settle'];
  plan: Plan;
  log(line: string): void;
}

interface FilteredPage {
  items: { id: string; title: string; deadline: string; assignee: { id: string; displayName: string } | null }[];
  total: number;
  totalExact: boolean;
}

/**
 * Both servers must answer the same rows in the same order, each with the same assignee's name,
 * and the same total, before their speeds mean anything side by side; and the page must be the
 * one the scenario means: full, with assignees expanded.
 */
async function checkSameAnswer(setup: FilteredListSetup, cookie: string): Promise<FilteredPage> {
  const [a, b] = await Promise.all([
    send(setup.servicePort, { method: 'GET', path: FILTERED_LIST_PATH, host: setup.tenant.host, headers: { cookie } }),
    send(setup.baselinePort, { method: 'GET', path: FILTERED_LIST_PATH, host: 'baseline' }),
  ]);
  if (a.status !== 200) throw new Error(`GET ${FILTERED_LIST_PATH} answered ${a.status}: ${a.body.slice(0, 300)}`);
  if (b.status !== 200) throw new Error(`the baseline answered ${b.status}: ${b.body.slice(0, 300)}`);
  const service = JSON.parse(a.body) as FilteredPage;
  const baseline = JSON.parse(b.body) as FilteredPage;
  const rows = (page: FilteredPage) => JSON.stringify(page.items);
  if (rows(service) !== rows(baseline) || service.total !== baseline.total) {
    throw new Error(
      `list-filtered: the service and the baseline answer different pages (totals ${service.total} and ${baseline.total})\n  service:  ${rows(service).slice(0, 400)}\n  baseline: ${rows(baseline).slice(0, 400)}`,
    );
  }
  if (service.items.length !== 20 || !service.items.some((item) => item.assignee !== null)) {
    throw new Error(
      `list-filtered: the page holds ${service.items.length} tasks, none assigned: not the page the scenario means`,
    );
  }
  return service;
}

export async function measureFilteredListGroup(setup: FilteredListSetup): Promise<ResultRow[]> {
  const { log } = setup;
  const started = performance.now();
  const seeded = await seedTasks(setup.databaseUrl, setup.tenant.id, {
    count: setup.tasks,
    runId: setup.runId,
    password: setup.password,
  });
  log(
    `  seeded ${seeded.tasks} tasks in the first tenant and copied them for the baseline in ${((performance.now() - started) / 1000).toFixed(1)} s: ${seeded.overdue} open or acknowledged and overdue, ${seeded.asked} of them high or critical`,
  );
  const cookie = await signIn(setup.servicePort, setup.tenant.host, seeded.email, setup.password);
  const page = await checkSameAnswer(setup, cookie);
  log(
    `  both answer the same page of 20 (total ${page.total}${page.totalExact ? '' : '+'}), the first: ${JSON.stringify(page.items[0])}`,
  );
  const at = (port: number) => `http://127.0.0.1:${port}${FILTERED_LIST_PATH}`;
  const pair: Pair = {
    name: 'list-filtered',
    pids: setup.pids,
    settle: setup.settle,
    service: { url: at(setup.servicePort), method: 'GET', headers: { host: setup.tenant.host, cookie } },
    baseline: { url: at(setup.baselinePort), method: 'GET' },
  };
  log(
    `list-filtered: ${setup.plan.connections} connections, warm-up ${setup.plan.warmupSeconds} s, ${setup.plan.rounds} × ${setup.plan.seconds} s each side`,
  );
  const figures = await measurePair(pair, setup.plan);
  const ratio = figures.service.rps / figures.baseline.rps;
  const pick = (f: typeof figures.service) => ({
    rps: f.rps,
    p50_ms: f.p50_ms,
    p99_ms: f.p99_ms,
    samples: f.requests,
  });
  return [
    {
      name: 'list-filtered',
      ...pick(figures.service),
      ratio_to_baseline: ratio,
      table_rows: seeded.tasks,
      target: '≥ 0.8× baseline',
      met: ratio >= 0.8,
    },
    { name: 'list-filtered-baseline', ...pick(figures.baseline), ratio_to_baseline: 1, table_rows: seeded.tasks },
  ];
}
