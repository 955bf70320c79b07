import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { createCustomer, startTestApp, type TestApp } from '../helpers/app.ts';
import { widget } from '../helpers/testkit-module.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { entity } from '../../framework/entity/define.ts';
import { resolveEntity } from '../../framework/entity/resolve.ts';
import { EntityOperations } from '../../framework/operations/entity-ops.ts';
import type { PageQuery } from '../../framework/operations/paging.ts';
import type { PlanNode } from '../helpers/plan-node.ts';

// Issue 46, point 7: reading a record's history is one statement, read from the table's one index,
// its key (tenant, row, id), however many revisions the tenant holds; a revision costs its write
// that one index entry (migrations/framework/0017_revisions_one_key.sql).
const ROWS = 2000;
const REVISIONS_PER_ROW = 50;
let app: TestApp;
let big: TenantRef;
let ops: EntityOperations;
let target: string;

beforeAll(async () => {
  app = await startTestApp();
  big = await createCustomer(app, 'big');
  ops = new EntityOperations(resolveEntity(entity(widget)), { config: app.services.config });
  const client = await app.services.db.pool.connect();
  try {
    await client.query('begin');
    await client.query('set local statement_timeout = 0');
    await client.query(`select set_config('app.tenant_id', $1, true)`, [big.id]);
    // 2,000 widgets with 50 revisions each (100,000), their ids in time order as the service makes them.
    const { rows } = await client.query<{ id: string }>(
      `insert into widgets (tenant_id, name, size, color) select $1, 'w' || i, i % 1000, 'grey' from generate_series(1, $2) as i returning id`,
      [big.id, ROWS],
    );
    target = rows[ROWS / 2]!.id;
    await client.query(
      `insert into revisions (tenant_id, id, entity, row_id, at, actor_kind, operation, old_values, new_values)
       select $1, (lpad(to_hex(r), 8, '0') || '-0000-7000-8000-' || lpad(to_hex(w.n), 12, '0'))::uuid, 'testkit.widget', w.id,
              now() - make_interval(secs => $2 - r), 'system', 'update', jsonb_build_object('size', r - 1), jsonb_build_object('size', r)
         from (select id, row_number() over (order by id) as n from widgets where tenant_id = $1) w
        cross join generate_series(1, $2) as r`,
      [big.id, REVISIONS_PER_ROW],
    );
    await client.query('commit');
  } finally {
    client.release();
  }
  await app.services.db.pool.query('vacuum analyze revisions');
  await app.services.db.pool.query('vacuum analyze widgets');
}, 240_000);
afterAll(async () => {
  await app?.close();
});

/** Every scan of revisions in the plan: its kind, its index, and the rows it touched. */
function revisionScans(plan: PlanNode): { kind: string; index: string | undefined; rows: number }[] {
  const scans: { kind: string; index: string | undefined; rows: number }[] = [];
  const walk = (node: PlanNode) => {
    if (node['Relation Name'] === 'revisions')
      scans.push({
        kind: node['Node Type'],
        index: node['Index Name'],
        rows: (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0)) * node['Actual Loops'],
      });
    for (const child of node.Plans ?? []) walk(child);
  };
  walk(plan);
  return scans;
}

const page = (query: Partial<PageQuery>): PageQuery => ({ limit: 20, offset: 0, sort: '-at', ...query });

/** EXPLAIN ANALYZE of the very statement the history route runs, in the tenant's transaction as the restricted role. */
async function explainHistory(query: PageQuery) {
  return app.services.transactions.run(big, async (ctx) => {
    const history = ops.recordHistory!;
    const record = ops.historyCondition(ctx, target);
    const statement = history.pager.statement(
      query,
      { conditions: [record.sql], params: record.params },
      { tenantId: big.id, cursors: app.services.cursors },
    );
    const { rows } = await ctx.db.executeQuery<Record<string, unknown>>(
      CompiledQuery.raw(`explain (analyze, format json) ${statement.text}`, statement.params),
    );
    return { text: statement.text, plan: (rows[0]!['QUERY PLAN'] as { Plan: PlanNode }[])[0]!.Plan };
  });
}

describe('reading a record’s history', () => {
  it('has 100,000 revisions of 2,000 records to read among', async () => {
    const { rows } = await app.services.db.pool.query<{ n: number }>(
      'select count(*)::int as n from revisions where tenant_id = $1',
      [big.id],
    );
    expect(rows[0]!.n).toBe(ROWS * REVISIONS_PER_ROW);
  });

  it('is one statement that reads the record’s page from the key revisions_pkey, never scanning the table', async () => {
    for (const query of [page({}), page({ sort: 'at' }), page({ limit: 5, offset: 10 })]) {
      const { text, plan } = await explainHistory(query);
      // One statement: no second one hidden after a semicolon.
      expect(text.trim().replace(/;$/, '')).not.toContain(';');
      const scans = revisionScans(plan);
      expect(scans.length, query.sort).toBeGreaterThan(0);
      for (const scan of scans) {
        expect(scan.kind, JSON.stringify(scans)).toMatch(/^Index (Only )?Scan$/);
        expect(scan.index).toBe('revisions_pkey');
        // The record's own 50 revisions at most, not the tenant's 100,000.
        expect(scan.rows).toBeLessThanOrEqual(REVISIONS_PER_ROW + 1);
      }
    }
  });

  it('comes from the one index revisions has: each revision a write records costs one index entry', async () => {
    const { rows } = await app.services.db.pool.query<{ name: string; primary: boolean; columns: string[] }>(
      `select i.indexrelid::regclass::text as name, i.indisprimary as primary,
              array(select a.attname::text from unnest(i.indkey) with ordinality k(attnum, n)
                      join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum order by k.n) as columns
         from pg_index i where i.indrelid = 'revisions'::regclass`,
    );
    expect(rows).toEqual([{ name: 'revisions_pkey', primary: true, columns: ['tenant_id', 'row_id', 'id'] }]);
  });
});
