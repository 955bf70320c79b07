import type pg from 'pg';
import type { ModuleRegistry as Registry } from '../contracts/services.ts';
import { preparedQuery } from '../db/statements.ts';

/** A subscription's onlyTenantsWith, resolved: its queue, and the table a concerned tenant has a live row in. */
export interface TenantFilter {
  queue: string;
  table: string;
  softDelete: boolean;
}

/**
 * The relay reads the tables as tenantry_cross_tenant, for the statement alone: its own role (the
 * owner) is held to each table's tenant policy like every other (row-level security is forced),
 * and tenantry_cross_tenant reads exactly the tables a migration opened to it
 * (allow_cross_tenant_read), and writes nothing.
 */
const AS_CROSS_TENANT = 'set local role tenantry_cross_tenant';
const BACK_TO_OWN_ROLE = 'reset role';

// Whether tenantry_cross_tenant may read each table: the grant and the policy allow_cross_tenant_read adds.
const CROSS_TENANT_READABLE = `
select t.name
  from unnest($1::text[]) as t(name)
 where not has_table_privilege('tenantry_cross_tenant', t.name, 'select')
    or not exists (select 1 from pg_policies p
                    where p.schemaname = current_schema() and p.tablename = t.name
                      and p.cmd = 'SELECT' and 'tenantry_cross_tenant' = any(p.roles))`;

/**
 * Refuses to start a relay whose filtered subscriptions' tables its cross-tenant read cannot see:
 * every claim would fail on them, and no event of any subscription would move on.
 */
export async function checkCrossTenantReads(pool: pg.Pool, filters: Iterable<TenantFilter>): Promise<void> {
  const tables = [...new Set([...filters].map((f) => f.table))];
  if (tables.length === 0) return;
  const { rows } = await pool.query<{ name: string }>(CROSS_TENANT_READABLE, [tables]);
  if (rows.length > 0) {
    throw new Error(
      `onlyTenantsWith: tenantry_cross_tenant cannot read ${rows.map((r) => r.name).join(', ')}; the module's migration must call allow_cross_tenant_read on it`,
    );
  }
}

/** The filters of the registry's subscriptions that declare onlyTenantsWith, by queue. */
export function tenantFilters(
  registry: Registry,
  queueOf: (subscription: string) => string,
): Map<string, TenantFilter> {
  const filters = new Map<string, TenantFilter>();
  for (const sub of registry.subscriptions) {
    if (!sub.onlyTenantsWith) continue;
    // The boot check (checks.ts) has made sure it is a tenant entity table of the subscription's module.
    const entity = registry.entities.find((e) => e.names.table === sub.onlyTenantsWith?.table);
    if (!entity) throw new Error(`subscription ${sub.name}: no entity table ${sub.onlyTenantsWith.table}`);
    filters.set(queueOf(sub.name), {
      queue: queueOf(sub.name),
      table: entity.names.table,
      softDelete: entity.deleteMode === 'soft',
    });
  }
  return filters;
}

/**
 * One statement for a whole batch: which of its tenants each filter concerns, as (filter index,
 * tenant) rows. Each existence check walks the table's index leading with tenant_id.
 */
export function concernedTenantsStatement(
  filters: readonly TenantFilter[],
  tenantIds: readonly string[],
): pg.QueryConfig {
  const parts = filters.map((f, i) => {
    const live = f.softDelete ? ' and r.deleted_at is null' : '';
    return `select ${i} as filter, t.tenant_id::text as tenant_id from unnest($1::uuid[]) as t(tenant_id)
             where exists (select 1 from "${f.table}" r where r.tenant_id = t.tenant_id${live})`;
  });
  return preparedQuery(parts.join('\nunion all\n'), [tenantIds]);
}

/**
 * Runs the statement in the caller's transaction (the relay's claim) under tenantry_cross_tenant,
 * and answers queue → the concerned tenants among tenantIds. The role switch, the statement and
 * the switch back go out together.
 */
export async function concernedTenants(
  client: pg.PoolClient,
  filters: readonly TenantFilter[],
  tenantIds: readonly string[],
): Promise<Map<string, Set<string>>> {
  const [, { rows }] = await Promise.all([
    client.query(AS_CROSS_TENANT),
    client.query<{ filter: number; tenant_id: string }>(concernedTenantsStatement(filters, tenantIds)),
    client.query(BACK_TO_OWN_ROLE),
  ]);
  const concerned = new Map<string, Set<string>>(filters.map((f) => [f.queue, new Set<string>()]));
  for (const row of rows) concerned.get(filters[row.filter]!.queue)!.add(row.tenant_id);
  return concerned;
}
