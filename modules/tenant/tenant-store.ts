import { sql } from 'kysely';
import type { TxContext } from '../../framework/context/tx.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { isUuid } from '../../framework/operations/entity-ops.ts';
import { notFound } from '../../framework/errors.ts';
import { lockTenant } from '../../framework/tenancy/control-plane.ts';

export interface TenantView {
  id: string;
  slug: string;
  name: string;
  status: 'active' | 'suspended';
  isOperator: boolean;
  hosts: { host: string; primary: boolean }[];
  createdAt: Date;
  updatedAt: Date;
}

// Tenants and hosts are global tables (no tenant_id, no row-level security): the operator's
// transaction reads every tenant. Hosts come back primary first, then oldest first.
const TENANT_SELECT = sql`
  t.id, t.slug, t.name, t.status, t.is_operator as "isOperator", t.created_at as "createdAt", t.updated_at as "updatedAt",
  coalesce((select json_agg(json_build_object('host', h.host, 'primary', h.is_primary) order by h.is_primary desc, h.created_at, h.host)
              from tenant_hosts h where h.tenant_id = t.id), '[]'::json) as hosts`;

export async function listTenants(ctx: TxContext, page: { limit: number; offset: number }): Promise<{ items: TenantView[]; total: number }> {
  const { rows } = await sql<TenantView & { total: string }>`
    select ${TENANT_SELECT}, count(*) over () as total
      from tenants t order by t.created_at, t.id limit ${page.limit} offset ${page.offset}`.execute(ctx.db);
  let total = rows.length > 0 ? Number(rows[0]!.total) : 0;
  if (rows.length === 0 && page.offset > 0) {
    total = Number((await sql<{ n: string }>`select count(*) as n from tenants`.execute(ctx.db)).rows[0]!.n);
  }
  return { items: rows.map(({ total: _total, ...tenant }) => tenant), total };
}

/** One tenant, or 404; with lock, the row is held until the transaction ends. */
export async function readTenant(ctx: TxContext, id: string, options: { lock?: boolean } = {}): Promise<TenantView> {
  if (!isUuid(id)) throw notFound();
  if (options.lock) await lockTenant(ctx, id);
  const { rows } = await sql<TenantView>`select ${TENANT_SELECT} from tenants t where t.id = ${id}`.execute(ctx.db);
  if (!rows[0]) throw notFound();
  return rows[0];
}

export const tenantRef = (tenant: TenantView): TenantRef => ({ id: tenant.id, slug: tenant.slug, isOperator: tenant.isOperator });

export async function hostOwner(ctx: TxContext, host: string): Promise<string | undefined> {
  const { rows } = await sql<{ tenant_id: string }>`select tenant_id from tenant_hosts where host = ${host}`.execute(ctx.db);
  return rows[0]?.tenant_id;
}
