import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ensureDatabase, startEmbeddedPostgres } from '../../framework/db/embedded.ts';
import { freePort } from './database.ts';

/**
 * What the revisions table's indexes cost an insert, with nothing else in the way: a table shaped
 * like `revisions` (its columns a create fills) under each key layout, 20,000 creates' revisions
 * inserted one statement each after a checkpoint (ids and row ids ascending, as UUIDv7 are), in a
 * tenant that already holds revisions of another entity, with or without a tenant of a higher id
 * beside it (its range then not the index's right edge). Reported: WAL bytes per insert and each
 * index's pages. docs/performance.md "History cost"; the app's own figures are history-wal.ts's.
 *
 *   node scripts/bench/history-index-cost.ts
 */
const LAYOUTS: Record<string, string> = {
  'two indexes (tenant_id, id) + (tenant_id, entity, row_id, id)':
    'alter table r add primary key (tenant_id, id); create index r_of_row on r (tenant_id, entity, row_id, id)',
  'one key (tenant_id, row_id, id)': 'alter table r add primary key (tenant_id, row_id, id)',
  'one key (tenant_id, entity, row_id, id)': 'alter table r add primary key (tenant_id, entity, row_id, id)',
};
const INSERTS = 20_000;
const TENANT = '55555555-1111-1111-1111-111111111111';

const dir = mkdtempSync(join(tmpdir(), 'tenantry-history-index-'));
chmodSync(dir, 0o755);
const server = await startEmbeddedPostgres({ dir: join(dir, 'data'), port: await freePort() });
try {
  const client = new pg.Client({ connectionString: await ensureDatabase(server.adminUrl, 'history_index') });
  await client.connect();
  for (const rightEdge of [true, false]) {
    for (const [layout, ddl] of Object.entries(LAYOUTS)) {
      await client.query('drop table if exists r');
      await client.query(
        'create table r (tenant_id uuid not null, id uuid not null, entity text not null, row_id uuid not null, at timestamptz not null, new_values jsonb not null)',
      );
      await client.query(ddl);
      const others = (tenant: string, entity: string) =>
        client.query(
          `insert into r select $1, gen_random_uuid(), $2, gen_random_uuid(), now(), '{}' from generate_series(1, 2000)`,
          [tenant, entity],
        );
      await others('11111111-1111-1111-1111-111111111111', 'user.user');
      if (!rightEdge) await others('ffffffff-1111-1111-1111-111111111111', 'testkit.widget');
      await others(TENANT, 'user.user');
      await client.query('checkpoint');
      const lsn = (await client.query<{ l: string }>('select pg_current_wal_lsn() as l')).rows[0]!.l;
      await client.query(`do $$ begin for i in 1..${INSERTS} loop
        insert into r values ('${TENANT}', ('01900000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 'testkit.widget',
          ('01900000-0000-7000-9000-' || lpad(to_hex(i), 12, '0'))::uuid, now(),
          '{"name": "a widget", "size": 7, "color": "blue", "approved": false, "approvedAt": null}');
      end loop; end $$`);
      const bytes = Number(
        (await client.query<{ b: string }>('select pg_wal_lsn_diff(pg_current_wal_lsn(), $1) as b', [lsn])).rows[0]!.b,
      );
      const { rows } = await client.query<{ pages: string }>(
        `select string_agg(pg_relation_size(indexrelid) / 8192 || ' pages', ' + ') as pages from pg_index where indrelid = 'r'::regclass`,
      );
      console.log(
        `${rightEdge ? 'at the right edge' : 'inside the index '}  ${layout}: ${(bytes / INSERTS).toFixed(0)} WAL bytes an insert; index ${rows[0]!.pages}`,
      );
    }
  }
  await client.end();
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
