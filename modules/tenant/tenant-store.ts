import { jsonArrayFrom } from 'kysely/helpers/postgres';
import type { TenantRef, TxContext } from '../../framework/entity/define.ts';
import { isUuid } from '../../framework/operations/entity-ops.ts';
import { KeysetPager, type Page, type PageQuery } from '../../framework/operations/paging.ts';
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
// The list's columns are SQL text because the framework's pager takes its select as text, fixed
// here at declaration; readTenant builds the same row with the typed builder.
const TENANT_COLUMNS = `
  t.id, t.slug, t.name, t.status, t.is_operator as "isOperator", t.created_at as "createdAt", t.updated_at as "updatedAt",
  coalesce((select json_agg(json_build_object('host', h.host, 'primary', h.is_primary) order by h.is_primary desc, h.created_at, h.host)
              from tenant_hosts h where h.tenant_id = t.id), '[]'::json) as hosts`;

/** The sorts the tenant list offers, each read from an index of its own (migrations/framework). */
export const TENANT_SORTS = ['createdAt', 'slug', 'name'] as const;

// The framework's list: the same parameters, answer and keyset paging as every generated list.
const tenantPages = new KeysetPager({
  select: TENANT_COLUMNS,
  from: 'tenants t',
  id: 't.id',
  where: [],
  sorts: { createdAt: { column: 't.created_at' }, slug: { column: 't.slug' }, name: { column: 't.name' } },
});

/**
 * A search (q): tenants whose name or slug, or one of whose hosts, contains the text, ignoring
 * case. Written as a union of two index reads (the trigram indexes of
 * migrations/framework/0010_tenant_search_resume_remove_host.sql) rather than an OR with EXISTS,
 * which PostgreSQL answers by reading every tenant.
 */
const SEARCH_CONDITION = `t.id in (select s.id from tenants s where lower(s.name || ' ' || s.slug) like $1
                   union select h.tenant_id from tenant_hosts h where h.host like $1)`;

/** q as a LIKE pattern matching it anywhere, its own %, _ and backslash taken literally. */
export const containsPattern = (q: string): string =>
  `%${q
    .trim()
    .toLowerCase()
    .replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

export async function listTenants(ctx: TxContext, page: PageQuery, search?: string): Promise<Page<TenantView>> {
  const filter = search?.trim() ? { conditions: [SEARCH_CONDITION], params: [containsPattern(search)] } : undefined;
  return (await tenantPages.page(ctx, page, filter)) as unknown as Page<TenantView>;
}

/** One tenant, or 404; with lock, the row is held until the transaction ends. */
export async function readTenant(ctx: TxContext, id: string, options: { lock?: boolean } = {}): Promise<TenantView> {
  if (!isUuid(id)) throw notFound();
  if (options.lock) await lockTenant(ctx, id);
  const row = await ctx.db
    .selectFrom('tenants as t')
    .select((eb) => [
      't.id',
      't.slug',
      't.name',
      't.status',
      't.is_operator as isOperator',
      't.created_at as createdAt',
      't.updated_at as updatedAt',
      jsonArrayFrom(
        eb
          .selectFrom('tenant_hosts as h')
          .select(['h.host', 'h.is_primary as primary'])
          .whereRef('h.tenant_id', '=', 't.id')
          .orderBy('h.is_primary', 'desc')
          .orderBy('h.created_at')
          .orderBy('h.host'),
      ).as('hosts'),
    ])
    .where('t.id', '=', id)
    .executeTakeFirst();
  if (!row) throw notFound();
  return row;
}

export const tenantRef = (tenant: TenantView): TenantRef => ({
  id: tenant.id,
  slug: tenant.slug,
  isOperator: tenant.isOperator,
});

export async function hostOwner(ctx: TxContext, host: string): Promise<string | undefined> {
  const row = await ctx.db.selectFrom('tenant_hosts').select('tenant_id').where('host', '=', host).executeTakeFirst();
  return row?.tenant_id;
}
