import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { Metrics } from '../../framework/observability/metrics.ts';
import { allModules } from '../../modules/index.ts';
import { compose } from '../../framework/composition.ts';
import { testConfig } from '../helpers/config.ts';

const FILE = resolve(import.meta.dirname, '../../deploy/prometheus/tenantry-rules.yaml');

interface Rule {
  alert?: string;
  expr?: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

const rules = (): Rule[] =>
  (parse(readFileSync(FILE, 'utf8')) as { groups: { name: string; rules: Rule[] }[] }).groups.flatMap((g) => g.rules);

/** Every series name the framework exposes, histograms with their _bucket, _sum and _count. */
async function exposedSeries(): Promise<Set<string>> {
  const metrics = new Metrics({
    pool: () => ({ total: 0, idle: 0, waiting: 0 }),
    unrelayedEvents: async () => 0,
    tenantsByStatus: async () => ({}),
  });
  const names = new Set<string>();
  for (const metric of await metrics.registry.getMetricsAsJSON()) {
    names.add(metric.name);
    if (String(metric.type) === 'histogram')
      for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${metric.name}${suffix}`);
  }
  return names;
}

describe('deploy/prometheus/tenantry-rules.yaml', () => {
  it('is a rules file: groups of alerts, each with an expression, a severity and a summary', () => {
    const all = rules();
    expect(all.length).toBeGreaterThan(0);
    for (const rule of all) {
      expect(rule.alert, JSON.stringify(rule)).toMatch(/^Tenantry[A-Za-z]+$/);
      expect(typeof rule.expr, rule.alert).toBe('string');
      expect(['page', 'ticket'], rule.alert).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary, rule.alert).toBeTruthy();
      if (rule.for !== undefined) expect(rule.for, rule.alert).toMatch(/^\d+[smhd]$/);
    }
  });

  it('names only series the framework exposes', async () => {
    const exposed = await exposedSeries();
    const named = new Set(rules().flatMap((r) => r.expr!.match(/tenantry_[a-z_]+/g) ?? []));
    expect(named.size).toBeGreaterThan(5);
    expect([...named].filter((n) => !exposed.has(n))).toEqual([]);
  });

  it('alerts on a 5xx rate, p99 latency per operation, outbox lag over 5 s, any dead letter and pool waiters', () => {
    const exprOf = (alert: string) => rules().find((r) => r.alert === alert)?.expr ?? '';
    expect(exprOf('TenantryServerErrors')).toContain('status_class="5xx"');
    expect(exprOf('TenantrySlowOperation')).toMatch(/histogram_quantile\(0\.99, sum by \(operation, le\)/);
    expect(exprOf('TenantryOutboxLag')).toMatch(/tenantry_outbox_relay_lag_seconds_bucket.*> 5$/s);
    expect(exprOf('TenantryDeadLetter')).toMatch(/increase\(tenantry_outbox_dead_letters_total\[\w+\]\)\) > 0/);
    expect(exprOf('TenantryPoolWaiters')).toContain('tenantry_db_pool_waiting_requests');
  });

  it('has, for every job the modules declare, a rule for two missed intervals and one for none since start', () => {
    const jobs = compose(allModules, testConfig()).jobs;
    expect(jobs.length).toBeGreaterThan(0);
    for (const job of jobs) {
      const late = rules().find((r) => r.alert === 'TenantryJobLate' && r.labels?.job === job.name);
      expect(late?.expr, job.name).toContain(`job="${job.name}"`);
      expect(late?.expr, job.name).toMatch(new RegExp(`> 2 \\* ${intervalSeconds(job.cron)}$`));
      const never = rules().find((r) => r.alert === 'TenantryJobNeverSucceeded' && r.labels?.job === job.name);
      expect(never?.expr, job.name).toBe(`absent(tenantry_job_last_success_timestamp_seconds{job="${job.name}"})`);
    }
  });
});

// promtool (Debian: the prometheus package, which .ci/run installs) checks the file as Prometheus
// would load it. Without it these are skipped, visibly, with the reason in their names.
const promtool = (() => {
  try {
    execFileSync('promtool', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
const withoutPromtool = promtool ? '' : ' (skipped: promtool is not installed; Debian: apt-get install prometheus)';

describe.skipIf(!promtool)(`promtool check rules${withoutPromtool}`, () => {
  it('passes on deploy/prometheus/tenantry-rules.yaml', () => {
    expect(execFileSync('promtool', ['check', 'rules', FILE], { encoding: 'utf8' })).toMatch(/SUCCESS/);
  });

  it('fails on a copy with a broken expression, so its pass means something', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tenantry-rules-'));
    try {
      const broken = join(dir, 'rules.yaml');
      writeFileSync(broken, readFileSync(FILE, 'utf8').replace(/expr: .*/, 'expr: sum(by (le) tenantry_'));
      expect(() => execFileSync('promtool', ['check', 'rules', broken], { stdio: 'pipe' })).toThrow(/FAILED|parse/i);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** The interval of the crons the modules use: every minute, hourly at a minute, daily at a time. */
function intervalSeconds(cron: string): number {
  const [minute, hour, ...rest] = cron.split(' ');
  if (rest.some((f) => f !== '*')) throw new Error(`no interval rule for cron ${cron}`);
  if (minute === '*') return 60;
  if (hour === '*') return 3600;
  return 86400;
}
