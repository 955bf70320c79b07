import type { Db } from '../db/pool.ts';
import type { TenantRef } from './tenant.ts';
import { preparedQuery } from '../db/statements.ts';

/** Reads a tenant by id (any status): workers and jobs act for tenants they know only by id. */
export async function tenantById(db: Db, id: string): Promise<TenantRef | undefined> {
  const { rows } = await db.pool.query<{ id: string; slug: string; is_operator: boolean }>(
    preparedQuery('select id, slug, is_operator from tenants where id = $1', [id]),
  );
  const row = rows[0];
  return row ? { id: row.id, slug: row.slug, isOperator: row.is_operator } : undefined;
}

export async function servedTenants(db: Db): Promise<TenantRef[]> {
  const { rows } = await db.pool.query<{ id: string; slug: string; is_operator: boolean }>(
    `select id, slug, is_operator from tenants where status = 'active' order by created_at, id`,
  );
  return rows.map((row) => ({ id: row.id, slug: row.slug, isOperator: row.is_operator }));
}
