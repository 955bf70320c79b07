import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import type { EntityOperations } from '../../../framework/operations/entity-ops.ts';
import { compileFilter } from '../../../framework/query/compile.ts';
import { TOTAL_CAP, type PageQuery } from '../../../framework/operations/paging.ts';
import type { PlanNode } from '../../helpers/plan-node.ts';
import { seedWithIndexesRebuilt } from '../../helpers/bulk-seed.ts';

/**
 * Issue 44, point 11: the task list's everyday question, "open or acknowledged, overdue, soonest
 * first" (`status=in.(open,acknowledged)&deadline=lt.now&sort=deadline`), at 1,000,000 tasks is read
 * from an index: the one the task entity declares (`indexes: [['status', 'deadline']]`, written by
 * migrations/task/0004_status_deadline_index.sql), not by walking the deadline index past every
 * finished task. The tasks are seeded in SQL (generate_series) as a tenant's years of work look:
 * of what was due more than 30 days ago, 1 in 25 is still open or acknowledged and the rest
 * finished; the last 30 days and the next 100 are mixed.
 */
const ROWS = 1_000_000;
const QUERY = { status: 'in.(open,acknowledged)', deadline: 'lt.now', sort: 'deadline' };
let app: TestApp;
let big: TenantRef;
let ops: EntityOperations;

beforeAll(async () => {
  app = await startTestApp();
  big = await createCustomer(app, 'big');
  ops = app.services.operations.of('task.task') as EntityOperations;
  const client = await app.services.db.pool.connect();
  try {
    await client.query('begin');
    await client.query('set local statement_timeout = 0');
    // The table's secondary indexes are built once over the million rows, as they are defined, instead
    // of taking a million inserts each: the same indexes, in a fraction of the time.
    await seedWithIndexesRebuilt(client, 'tasks', async () => {
      // Deadlines from 400 days ago to 100 days ahead, in the order the tasks were made.
      await client.query(
        `insert into tasks (tenant_id, title, status, priority, deadline, created_at, updated_at)
         select $1, 'task ' || i,
                case when i % 50 = 0 then 'open' when i % 50 = 25 then 'acknowledged'
                     when d < now() - interval '30 days' then (array['resolved', 'closed'])[1 + i % 2]
                     else (array['open', 'acknowledged', 'in_progress', 'resolved', 'closed'])[1 + i % 5] end,
                (array['low', 'medium', 'high', 'critical'])[1 + i % 4], d, d - interval '14 days', d - interval '14 days'
           from generate_series(1, $2) as i,
                lateral (select now() - interval '400 days' + (i * interval '500 days') / $2 as d) as t`,
        [big.id, ROWS],
      );
    });
    await client.query('commit');
  } finally {
    client.release();
  }
  await app.services.db.pool.query('vacuum analyze tasks');
}, 600_000);
afterAll(async () => {
  await app?.close();
});

interface Scan {
  kind: string;
  index: string | undefined;
  rows: number;
  counting: boolean;
}

/** Every scan of tasks in the plan: its kind, index, the rows it touched, and whether it is the capped count's. */
function taskScans(plan: PlanNode): Scan[] {
  const scans: Scan[] = [];
  const walk = (node: PlanNode, inCount: boolean) => {
    const counting = inCount || node['Subplan Name'] !== undefined || node['Parent Relationship'] === 'InitPlan';
    if (node['Relation Name'] === 'tasks')
      scans.push({
        kind: node['Node Type'],
        index: node['Index Name'],
        rows:
          (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)) *
          node['Actual Loops'],
        counting,
      });
    for (const child of node.Plans ?? []) walk(child, counting);
  };
  walk(plan, false);
  return scans;
}

/**
 * EXPLAIN ANALYZE of the very statement the task list runs for QUERY, as the restricted role in the
 * tenant, on a connection of the test's own; `without` drops an index first, inside that
 * transaction, which is rolled back.
 */
async function explainList(without?: string): Promise<{ scans: Scan[]; ids: string[] }> {
  const now = new Date();
  const asked = ops.parse(QUERY, now);
  const compiled = compileFilter(asked, 1);
  const page: PageQuery = { limit: 20, offset: 0, sort: 'deadline' };
  const statement = ops.pager.statement(
    page,
    { conditions: compiled.conditions, params: compiled.params, varies: true },
    { tenantId: big.id, cursors: app.services.cursors },
  );
  const client = await app.services.db.pool.connect();
  try {
    await client.query('begin');
    if (without) await client.query(`drop index ${without}`);
    await client.query(`select set_config('app.tenant_id', $1, true)`, [big.id]);
    await client.query('set local role tenantry_app');
    const { rows } = await client.query(`explain (analyze, format json) ${statement.text}`, statement.params);
    const plan = (rows[0]!['QUERY PLAN'] as { Plan: PlanNode }[])[0]!.Plan;
    const answered = await client.query(statement.text, statement.params);
    return { scans: taskScans(plan), ids: answered.rows.map((r: { id: string }) => r.id) };
  } finally {
    await client.query('rollback');
    client.release();
  }
}

describe('the task list filtered by status and deadline, sorted by deadline, at 1,000,000 tasks', () => {
  it('has a million tasks, and tens of thousands that answer the question', async () => {
    const { rows } = await app.services.db.pool.query<{ all: number; asked: number }>(
      `select count(*)::int as all,
              count(*) filter (where status in ('open', 'acknowledged') and deadline < now())::int as asked
         from tasks where tenant_id = $1`,
      [big.id],
    );
    expect(rows[0]!.all).toBe(ROWS);
    expect(rows[0]!.asked).toBeGreaterThan(10_000);
  });

  it('reads its page and its capped total from indexes, the total from the declared index tasks_by_status_deadline', async () => {
    const { scans, ids } = await explainList();
    const seen = JSON.stringify(scans);
    expect(ids).toHaveLength(21);
    for (const scan of scans) expect(scan.kind, seen).toMatch(/^Index (Only )?Scan$/);
    // The page walks the deadline order and stops at its 21st match: a few hundred rows.
    const page = scans.filter((s) => !s.counting);
    expect(page.length, seen).toBeGreaterThan(0);
    expect(
      page.reduce((n, s) => n + s.rows, 0),
      seen,
    ).toBeLessThanOrEqual(2_000);
    // The total counts up to its cap from the declared index alone, touching no row that does not match.
    const count = scans.filter((s) => s.counting);
    expect(count.map((s) => s.index)).toEqual(['tasks_by_status_deadline']);
    expect(count[0]!.rows, seen).toBeLessThanOrEqual(TOTAL_CAP + 1);
  });

  it('without the declared index, the same statement touches more rows for its total (the baseline)', async () => {
    const declared = await explainList();
    const without = await explainList('tasks_by_status_deadline');
    expect(without.ids).toEqual(declared.ids);
    const counted = (scans: Scan[]) => scans.filter((s) => s.counting).reduce((n, s) => n + s.rows, 0);
    expect(counted(without.scans), JSON.stringify(without.scans)).toBeGreaterThan(counted(declared.scans));
  });
});
