import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { KeysetPager } from '../../framework/operations/paging.ts';
import { CursorSeal } from '../../framework/operations/cursor.ts';
import { permissionPredicate } from '../../framework/context/tx.ts';

/**
 * The widget list's statement as the service builds it (framework/operations/paging.ts over the
 * widgets table: first page of 20 plus one, the total counted up to its cap), run under
 * EXPLAIN (ANALYZE, BUFFERS) the way a request runs it: as the restricted role, with the tenant
 * and the caller's permission set, so row-level security and the permission guard are in the plan. Returns the execution time and the buffers touched,
 * the figures that say whether the list's cost grows with the table.
 */
const pager = new KeysetPager({
  select: '"id", "created_at", "updated_at", "name", "size", "note", "color", "approved", "approved_at"',
  from: '"widgets"',
  id: 'id',
  where: ['deleted_at is null'],
  sorts: { createdAt: { column: '"created_at"' } },
});

export interface ListPlan {
  executionMs: number;
  sharedHit: number;
  sharedRead: number;
  text: string;
}

export async function explainList(databaseUrl: string, tenantId: string): Promise<ListPlan> {
  const { text, params } = pager.statement(
    { limit: 20, offset: 0, sort: 'createdAt' },
    { conditions: [], params: [], guard: permissionPredicate('widget:read') },
    // A first page: no cursor to open, its next sealed with a key of this run's own.
    { tenantId, cursors: new CursorSeal(randomBytes(32)) },
  );
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('begin');
    await client.query(
      `select set_config('app.tenant_id', $1, true), set_config('role', 'tenantry_app', true), set_config('app.permissions', 'widget:read', true)`,
      [tenantId],
    );
    // Twice: the first run warms the cache, the second is the one a busy list sees.
    await client.query(`explain (analyze, buffers, format json) ${text}`, params);
    const { rows } = await client.query<{
      'QUERY PLAN': [{ 'Execution Time': number; Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }];
    }>(`explain (analyze, buffers, format json) ${text}`, params);
    const explained = await client.query<{ 'QUERY PLAN': string }>(
      `explain (analyze, buffers, costs off, timing off, summary off) ${text}`,
      params,
    );
    await client.query('rollback');
    const plan = rows[0]!['QUERY PLAN'][0];
    return {
      executionMs: plan['Execution Time'],
      sharedHit: plan.Plan['Shared Hit Blocks'],
      sharedRead: plan.Plan['Shared Read Blocks'],
      text: explained.rows.map((r) => r['QUERY PLAN']).join('\n'),
    };
  } finally {
    await client.end();
  }
}
