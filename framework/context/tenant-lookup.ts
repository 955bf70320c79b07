import type { Db } from '../db/pool.ts';
import type { TenantRef } from './tenant.ts';
import { preparedQuery } from '../db/statements.ts';

interface TenantRow {
  id: string;
  slug: string;
  is_operator: boolean;
}

const toRef = (row: TenantRow): TenantRef => ({ id: row.id, slug: row.slug, isOperator: row.is_operator });

/** Reads a tenant by id (any status): workers and jobs act for tenants they know only by id. */
export async function tenantById(db: Db, id: string): Promise<TenantRef | undefined> {
  const { rows } = await db.pool.query<TenantRow>(
    preparedQuery('select id, slug, is_operator from tenants where id = $1', [id]),
  );
  return rows[0] ? toRef(rows[0]) : undefined;
}

/** The tenant with this id if it is served (active): a per-tenant job run skips one suspended since. */
export async function servedTenantById(db: Db, id: string): Promise<TenantRef | undefined> {
  const { rows } = await db.pool.query<TenantRow>(
    preparedQuery(`select id, slug, is_operator from tenants where id = $1 and status = 'active'`, [id]),
  );
  return rows[0] ? toRef(rows[0]) : undefined;
}

/** Of these tenant ids, the served (active) ones, by id: a batch of per-tenant runs reads them in one query. */
export async function servedTenantsByIds(db: Db, ids: readonly string[]): Promise<Map<string, TenantRef>> {
  const { rows } = await db.pool.query<TenantRow>(
    preparedQuery(`select id, slug, is_operator from tenants where id = any ($1::uuid[]) and status = 'active'`, [
      [...ids],
    ]),
  );
  return new Map(rows.map((row) => [row.id, toRef(row)]));
}

/** A tenant by slug with its status, for operator commands that name tenants the way people do. */
export async function tenantBySlug(db: Db, slug: string): Promise<(TenantRef & { status: string }) | undefined> {
  const { rows } = await db.pool.query<TenantRow & { status: string }>(
    'select id, slug, is_operator, status from tenants where slug = $1',
    [slug],
  );
  return rows[0] ? { ...toRef(rows[0]), status: rows[0].status } : undefined;
}

export async function servedTenants(db: Db): Promise<TenantRef[]> {
  const { rows } = await db.pool.query<TenantRow>(
    `select id, slug, is_operator from tenants where status = 'active' order by created_at, id`,
  );
  return rows.map(toRef);
}
