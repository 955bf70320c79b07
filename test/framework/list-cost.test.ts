import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { escapeLiteral } from 'pg';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { widget } from '../helpers/testkit-module.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { entity } from '../../framework/entity/define.ts';
import { resolveEntity } from '../../framework/entity/resolve.ts';
import { EntityOperations } from '../../framework/operations/entity-ops.ts';
import { TOTAL_CAP, type ListFilter, type ListPlace, type PageQuery } from '../../framework/operations/paging.ts';
import { tenantList } from '../../modules/tenant/tenant-store.ts';

const ROWS = 200_000;
let app: TestApp;
let big: TenantRef;
let neighbour: TenantRef;
let ops: EntityOperations;
let tablePages: number;

beforeAll(async () => {
  app = await startTestApp();
  big = await createCustomer(app, 'big');
  neighbour = await createCustomer(app, 'neighbour');
  ops = new EntityOperations(resolveEntity(entity(widget)), { config: app.services.config });
  // One statement each, as the table owner in the tenant's scope: another tenant's 50,000 widgets
  // first in the table (a list that scanned the table would read through them), then 200,000 of
  // one tenant, with names, sizes and times in no particular relation to each other.
  const client = await app.services.db.pool.connect();
  try {
    await client.query('begin');
    // Seeding 250,000 rows on a loaded machine may outlast database.statement_timeout_ms.
    await client.query('set local statement_timeout = 0');
    await client.query(`select set_config('app.tenant_id', $1, true)`, [neighbour.id]);
    await client.query(
      `insert into widgets (tenant_id, name, size, color) select $1, 'n' || i, i % 1000, 'grey' from generate_series(1, 50000) as i`,
      [neighbour.id],
    );
    await client.query(`select set_config('app.tenant_id', $1, true)`, [big.id]);
    await client.query(
      `insert into widgets (tenant_id, name, size, color, created_at, updated_at)
       select $1, 'w' || md5(i::text), (i::bigint * 7919) % 1000, 'grey', now() - make_interval(secs => i), now() - make_interval(secs => (i::bigint * 104729) % $2)
         from generate_series(1, $2) as i`,
      [big.id, ROWS],
    );
    await client.query('commit');
  } finally {
    client.release();
  }
  // What autovacuum would have done by the time such a table is listed: statistics and the
  // visibility map (so a count can read the index alone).
  await app.services.db.pool.query('vacuum analyze widgets');
  tablePages = (
    await app.services.db.pool.query<{ pages: number }>(
      `select relpages as pages from pg_class where relname = 'widgets'`,
    )
  ).rows[0]!.pages;
}, 240_000);
afterAll(async () => {
  await app?.close();
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Parent Relationship'?: string;
  'Subplan Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  'Shared Hit Blocks': number;
  'Shared Read Blocks': number;
  Plans?: PlanNode[];
}

interface Cost {
  /** Rows every scan of the page itself touched (kept or filtered out). */
  pageRows: number;
  /** Rows the capped count touched. */
  countRows: number;
  /** Buffers the whole statement touched (hit or read). */
  buffers: number;
  seqScans: string[];
  plan: PlanNode;
}

function cost(plan: PlanNode): Cost {
  const result: Cost = {
    pageRows: 0,
    countRows: 0,
    buffers: plan['Shared Hit Blocks'] + plan['Shared Read Blocks'],
    seqScans: [],
    plan,
  };
  const walk = (node: PlanNode, inCount: boolean) => {
    const counting = inCount || node['Subplan Name'] !== undefined || node['Parent Relationship'] === 'InitPlan';
    if (/Scan/.test(node['Node Type']) && node['Relation Name']) {
      const touched =
        (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)) *
        node['Actual Loops'];
      if (counting) result.countRows += touched;
      else result.pageRows += touched;
      if (node['Node Type'] === 'Seq Scan') result.seqScans.push(node['Relation Name']);
    }
    for (const child of node.Plans ?? []) walk(child, counting);
  };
  walk(plan, false);
  return result;
}

/**
 * EXPLAIN (ANALYZE, BUFFERS) of the very statement the list runs, in the tenant's transaction as
 * the restricted role. generic: as a named prepared statement planned once for any parameters,
 * which is how the service runs it once PostgreSQL settles on a generic plan.
 */
async function explain(statement: { text: string; params: unknown[] }, mode: 'custom' | 'generic'): Promise<Cost> {
  return app.services.transactions.run(big, async (ctx) => {
    const run = (text: string, params: unknown[] = []) =>
      ctx.db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(text, params));
    if (mode === 'custom') {
      const { rows } = await run(`explain (analyze, buffers, format json) ${statement.text}`, statement.params);
      return cost((rows[0]!['QUERY PLAN'] as { Plan: PlanNode }[])[0]!.Plan);
    }
    await run(`set local plan_cache_mode = force_generic_plan`);
    await run(`prepare list_page as ${statement.text}`);
    const args = statement.params
      .map((p) => (p === null ? 'null' : typeof p === 'number' ? String(p) : escapeLiteral(String(p))))
      .join(', ');
    const { rows } = await run(`explain (analyze, buffers, format json) execute list_page${args ? `(${args})` : ''}`);
    await run('deallocate list_page');
    return cost((rows[0]!['QUERY PLAN'] as { Plan: PlanNode }[])[0]!.Plan);
  });
}

/** A cursor pointing deep into the table for a sort, as a page there would have handed out. */
async function cursorAt(sort: string, position: number): Promise<string> {
  const descending = sort.startsWith('-');
  const field = descending ? sort.slice(1) : sort;
  const column = { createdAt: 'created_at', updatedAt: 'updated_at', name: 'name', size: 'size' }[field]!;
  const direction = descending ? 'desc' : 'asc';
  const { rows } = await app.services.db.pool.query<{ value: string; id: string }>(
    `select ${column}::text as value, id from widgets where tenant_id = $1 and deleted_at is null order by ${column} ${direction}, id ${direction} offset $2 limit 1`,
    [big.id, position],
  );
  const { scope } = ops.pager.statement(page({ sort }), NO_FILTER, place()).walk;
  return place().cursors.seal({ sort, value: rows[0]!.value, id: rows[0]!.id, total: TOTAL_CAP + 1 }, scope);
}

/** The big tenant's list as a request reads it: no filter, its cursors sealed for that tenant. */
const NO_FILTER: ListFilter = { conditions: [], params: [] };
const place = (): ListPlace => ({ tenantId: big.id, cursors: app.services.cursors });

const page = (query: Partial<PageQuery>): PageQuery => ({ limit: 20, offset: 0, sort: 'createdAt', ...query });

describe('a list page costs the same however large the table', () => {
  it('answers over HTTP with total stopped at the cap and totalExact false', async () => {
    const { cookie } = await signInAs(app, big, ['widget:read']);
    const res = await app.http('big.localhost').get('/api/v1/testkit/widgets?limit=5&sort=-size').set('Cookie', cookie);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      total: TOTAL_CAP,
      totalExact: false,
      limit: 5,
      offset: 0,
      next: expect.any(String),
    });
    const deeper = await app
      .http('big.localhost')
      .get(`/api/v1/testkit/widgets?limit=5&sort=-size&after=${res.body.next}`)
      .set('Cookie', cookie);
    expect(deeper.body.items[0].size).toBeLessThanOrEqual(res.body.items[4].size);
    // The neighbour's 50,000 rows are counted for the neighbour only.
    const other = await signInAs(app, neighbour, ['widget:read']);
    const theirs = await app
      .http('neighbour.localhost')
      .get('/api/v1/testkit/widgets?limit=1')
      .set('Cookie', other.cookie);
    expect(theirs.body).toMatchObject({ total: TOTAL_CAP, totalExact: false });
  });

  it('has 200,000 rows of one tenant to list, on thousands of pages', async () => {
    const { rows } = await app.services.db.pool.query<{ n: number }>(
      'select count(*)::int as n from widgets where tenant_id = $1',
      [big.id],
    );
    expect(rows[0]!.n).toBe(ROWS);
    expect(tablePages).toBeGreaterThan(2000);
  });

  for (const mode of ['custom', 'generic'] as const) {
    describe(`(${mode} plan)`, () => {
      it('reads the first page of 20 from the index: about 21 rows, and at most the cap for the count', async () => {
        const result = await explain(ops.pager.statement(page({}), NO_FILTER, place()), mode);
        expect(result.seqScans).toEqual([]);
        expect(result.pageRows).toBeLessThanOrEqual(21);
        expect(result.countRows).toBeLessThanOrEqual(TOTAL_CAP + 1);
        expect(result.buffers).toBeLessThan(300);
      });

      for (const sort of ['createdAt', '-createdAt', 'name', '-name', 'size', '-updatedAt']) {
        it(`reads a page deep in the table by cursor (sort=${sort}) the same way`, async () => {
          const after = await cursorAt(sort, 150_000);
          const result = await explain(ops.pager.statement(page({ sort, after }), NO_FILTER, place()), mode);
          expect(result.seqScans).toEqual([]);
          expect(result.pageRows).toBeLessThanOrEqual(21);
          expect(result.countRows).toBeLessThanOrEqual(TOTAL_CAP + 1);
          expect(result.buffers).toBeLessThan(300);
        });
      }

      it('counts the total up to the cap only', async () => {
        const result = await explain(ops.pager.countStatement(), mode);
        expect(result.seqScans).toEqual([]);
        expect(result.countRows).toBeLessThanOrEqual(TOTAL_CAP + 1);
        expect(result.buffers).toBeLessThan(tablePages / 10);
      });
    });
  }

  it('answers such a page with the total capped, totalExact false and a next cursor that continues it', async () => {
    const first = await app.services.transactions.run(big, (ctx) => ops.list(ctx, page({ sort: 'size' })));
    expect(first).toMatchObject({ total: TOTAL_CAP, totalExact: false, limit: 20, offset: 0 });
    expect(first.items).toHaveLength(20);
    const second = await app.services.transactions.run(big, (ctx) =>
      ops.list(ctx, page({ sort: 'size', after: first.next! })),
    );
    const both = [...first.items, ...second.items].map((r) => [(r as unknown as { size: number }).size, r.id] as const);
    const byOffset = await app.services.transactions.run(big, (ctx) =>
      ops.list(ctx, page({ sort: 'size', limit: 40 })),
    );
    expect(both).toEqual(byOffset.items.map((r) => [(r as unknown as { size: number }).size, r.id] as const));
  });
});

/** Each index of a table: its key columns in order (expressions left out) and its predicate. */
async function indexesOf(table: string): Promise<{ name: string; columns: string[]; predicate: string | null }[]> {
  const { rows } = await app.services.db.pool.query(
    `select i.indexrelid::regclass::text as name,
            array(select a.attname::text from unnest(i.indkey) with ordinality as k(attnum, n)
                    join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum order by k.n) as columns,
            pg_get_expr(i.indpred, i.indrelid) as predicate
       from pg_index i where i.indrelid = $1::regclass`,
    [table],
  );
  return rows;
}

describe('every list has an index for each of its sorts', () => {
  it('gives each sortable field of every entity an index on (tenant_id, row-access columns, column, id) over live rows', async () => {
    const missing: string[] = [];
    for (const entity of app.services.registry.entities) {
      // A singleton has no list; a global table has no tenant_id; a hard-deleting one keeps no dead rows.
      if (entity.singleton) continue;
      const indexes = await indexesOf(entity.names.table);
      const accessColumns = Object.keys(entity.def.rowAccess?.({ actorId: null } as never) ?? {}).map(
        (f) => entity.columns[f]!,
      );
      for (const field of entity.sortable) {
        const column =
          field === 'createdAt' ? 'created_at' : field === 'updatedAt' ? 'updated_at' : entity.columns[field]!;
        const leading = [...(entity.scope === 'global' ? [] : ['tenant_id']), ...accessColumns, column, 'id'];
        const found = indexes.some(
          (i) =>
            i.columns.slice(0, leading.length).join() === leading.join() &&
            (entity.deleteMode === 'hard' || /deleted_at IS NULL/i.test(i.predicate ?? '')),
        );
        if (!found) missing.push(`${entity.names.table}.${column}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('gives each sort of the tenant list that an index serves (as its OpenAPI says) an index on (column, id)', async () => {
    const indexes = await indexesOf('tenants');
    // Every field sorts (issue 44); these are the sorts the list says an index serves.
    const indexed = [...tenantList.model.fields.values()].filter((f) => f.indexed);
    expect(indexed.map((f) => f.name).sort()).toEqual(['createdAt', 'name', 'slug']);
    for (const { name, column } of indexed) {
      expect(
        indexes.some((i) => i.columns.join() === [column.replace(/^t\./, ''), 'id'].join()),
        name,
      ).toBe(true);
    }
  });
});
