import { jsonArrayFrom } from 'kysely/helpers/postgres';
import type { TenantRef, TxContext } from '../../framework/entity/define.ts';
import { isUuid } from '../../framework/operations/entity-ops.ts';
import type { Page } from '../../framework/operations/paging.ts';
import { QueryList } from '../../framework/query/query-list.ts';
import type { ListQuery } from '../../framework/query/parse.ts';
import { Tenant } from './tenant.schemas.ts';
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

/**
 * A search (q): tenants whose name or slug, or one of whose hosts, contains the text, ignoring
 * case. Written as a union of two index reads (the trigram indexes of
 * migrations/framework/0010_tenant_search_resume_remove_host.sql) rather than an OR with EXISTS,
 * which PostgreSQL answers by reading every tenant. The pattern is lower-cased by PostgreSQL's
 * lower(), as the name is: JavaScript's lower-cases some letters otherwise (a final Σ, İ).
 */
const searchCondition = (
  p: string,
) => `t.id in (select s.id from tenants s where lower(s.name || ' ' || s.slug) like lower(${p}::text)
                   union select h.tenant_id from tenant_hosts h where h.host like lower(${p}::text))`;

/** q as a LIKE pattern matching it anywhere, its own %, _ and backslash taken literally. */
export const containsPattern = (q: string): string => `%${q.trim().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * The operator's tenants list, through the query language like every list: by status
 * (`status=eq.suspended`), slug, name, creation or change time, operator or not; with q, the
 * search above. The sorts by creation, slug and name each read an index of their own
 * (migrations/framework); hosts are answered, never filtered (a list of objects).
 */
export const tenantList = new QueryList({
  label: 'tenants',
  item: Tenant,
  select: TENANT_COLUMNS,
  from: 'tenants t',
  id: 't.id',
  columns: {
    id: 't.id',
    slug: 't.slug',
    name: 't.name',
    status: 't.status',
    isOperator: 't.is_operator',
    createdAt: 't.created_at',
    updatedAt: 't.updated_at',
  },
  indexed: ['createdAt', 'slug', 'name'],
  defaultSort: 'createdAt',
  sortDescription: 'Oldest first (createdAt) unless sort asks for another order.',
  search: { fields: ['name', 'slug', 'hosts'], condition: searchCondition, value: containsPattern },
});

/** The tenants list's query string: paging, sort, q, a filter per field, or and fields. */
export const TenantListQuery = tenantList.querySchema;

/** A page of tenants as a request's query string asks (filters, q, sort, paging), and the query as read. */
export async function listTenants(
  ctx: TxContext,
  query: Record<string, unknown>,
): Promise<{ page: Page<TenantView>; asked: ListQuery }> {
  const { page, asked } = await tenantList.page(ctx, query);
  return { page: page as unknown as Page<TenantView>, asked };
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
