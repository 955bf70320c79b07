import pg from 'pg';
import { BASELINE_TABLE, widgetRowsSql } from './seed.ts';

/**
 * Grows the first tenant's widgets, in the service's table and in the baseline's copy alike, from
 * `from` to `to` rows: one INSERT … SELECT generate_series per table (the two in parallel), then
 * VACUUM ANALYZE, as a table that has lived a while has fresh statistics and visibility map.
 * Written as the tables' owner; the service's table has row-level security forced, so its
 * transaction sets the tenant. Resolves to the seconds it took.
 */
export async function growWidgets(databaseUrl: string, tenantId: string, from: number, to: number): Promise<number> {
  const started = performance.now();
  const service = new pg.Client({ connectionString: databaseUrl });
  const baseline = new pg.Client({ connectionString: databaseUrl });
  await Promise.all([service.connect(), baseline.connect()]);
  try {
    await Promise.all([
      (async () => {
        await service.query('begin');
        await service.query(`select set_config('app.tenant_id', $1, true)`, [tenantId]);
        // The rows' tenant exists: a superuser skips a million foreign-key checks against it.
        const { rows } = await service.query<{ rolsuper: boolean }>(
          'select rolsuper from pg_roles where rolname = current_user',
        );
        if (rows[0]?.rolsuper) await service.query('set local session_replication_role = replica');
        await service.query(widgetRowsSql('widgets', false), [from + 1, to]);
        await service.query('commit');
        await service.query('vacuum analyze widgets');
      })(),
      (async () => {
        await baseline.query(widgetRowsSql(BASELINE_TABLE, true), [from + 1, to, tenantId]);
        await baseline.query(`vacuum analyze ${BASELINE_TABLE}`);
      })(),
    ]);
  } finally {
    await Promise.all([service.end(), baseline.end()]);
  }
  return (performance.now() - started) / 1000;
}
