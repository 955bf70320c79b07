import pg from 'pg';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, startTestApp, type TestApp } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

// Tenant-owned rows name their tenant without a foreign key; the tenant row is kept instead
// (migrations framework/0006 and each module's …_without_tenant_key; docs/architecture.md).
let app: TestApp;
let acme: TenantRef;
let owner: pg.Client;

beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'acme');
  owner = new pg.Client({ connectionString: app.databaseUrl });
  await owner.connect();
});
afterAll(async () => {
  await owner?.end();
  await app?.close();
});

const sqlStateOf = async (statement: string, values: unknown[] = []): Promise<string | undefined> => {
  try {
    await owner.query(statement, values);
    return undefined;
  } catch (err) {
    return (err as { code?: string }).code;
  }
};

describe('a tenant row is kept, and tenant-owned rows name it without locking it', () => {
  it('no table but tenant_hosts (global) has a foreign key to tenants', async () => {
    const { rows } = await owner.query<{ tbl: string }>(
      `select conrelid::regclass::text as tbl from pg_constraint where contype = 'f' and confrelid = 'tenants'::regclass order by 1`,
    );
    expect(rows.map((r) => r.tbl)).toEqual(['tenant_hosts']);
  });

  it('an insert in a tenant takes no lock on its tenant row: the row can be locked FOR UPDATE NOWAIT meanwhile', async () => {
    const lockedMeanwhile = await app.services.transactions.run(acme, async (ctx) => {
      await sql`insert into widgets (name, size, color) values ('no-lock', 1, 'red')`.execute(ctx.db);
      // From a connection of its own, while the inserting transaction is still open.
      await owner.query('begin');
      try {
        return await sqlStateOf('select id from tenants where id = $1 for update nowait', [acme.id]);
      } finally {
        await owner.query('rollback');
      }
    });
    // With a key to tenants the insert would hold FOR KEY SHARE on the row: 55P03, lock not available.
    expect(lockedMeanwhile).toBeUndefined();
  });

  it('the database refuses to delete a tenant, truncate tenants or change a tenant id (23001), and nothing changes', async () => {
    expect(await sqlStateOf('delete from tenants where id = $1', [acme.id])).toBe('23001');
    expect(await sqlStateOf('update tenants set id = gen_random_uuid() where id = $1', [acme.id])).toBe('23001');
    expect(await sqlStateOf('truncate tenants cascade')).toBe('23001');
    const { rows } = await owner.query<{ status: string; hosts: number }>(
      `select status, (select count(*)::int from tenant_hosts h where h.tenant_id = t.id) as hosts from tenants t where id = $1`,
      [acme.id],
    );
    expect(rows).toEqual([{ status: 'active', hosts: 1 }]);
    // Suspending (an update of anything but the id) stays possible.
    expect(await sqlStateOf(`update tenants set name = name where id = $1`, [acme.id])).toBeUndefined();
  });
});
