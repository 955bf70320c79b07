import { CompiledQuery, sql } from 'kysely';
import type { TxContext } from '../context/tx.ts';
import { EVICT_TENANT_SQL } from '../context/host-cache.ts';
import type { HostDirectory } from '../contracts/services.ts';

// The restricted role may read tenants and tenant_hosts but not write them
// (migrations/framework/0003_control_plane_writes.sql): the control plane writes through these
// security-definer functions, each of which refuses (SQLSTATE 42501) unless the transaction acts
// for the operator tenant.

export interface TenantRow {
  id: string;
  slug: string;
  name: string;
  host: string;
  isOperator: boolean;
}

/** Inserts a tenant and its primary host (the operator tenant alone may do so on an empty database). */
export async function insertTenant(ctx: TxContext, tenant: TenantRow): Promise<void> {
  await sql`select tenant_create(${tenant.id}::uuid, ${tenant.slug}, ${tenant.name}, ${tenant.host}, ${tenant.isOperator})`.execute(
    ctx.db,
  );
}

/** Adds a host to a tenant; a primary host demotes the previous primary. */
export async function addTenantHost(ctx: TxContext, tenantId: string, host: string, primary: boolean): Promise<void> {
  await sql`select tenant_add_host(${tenantId}::uuid, ${host}, ${primary})`.execute(ctx.db);
}

/** Suspends an active customer tenant; false when there was nothing to change. */
export async function suspendTenant(ctx: TxContext, tenantId: string): Promise<boolean> {
  const { rows } = await sql<{ changed: boolean }>`select tenant_suspend(${tenantId}::uuid) as changed`.execute(ctx.db);
  return rows[0]?.changed === true;
}

/** Lifts a suspension; false when the tenant was not suspended. */
export async function resumeTenant(ctx: TxContext, tenantId: string): Promise<boolean> {
  const { rows } = await sql<{ changed: boolean }>`select tenant_resume(${tenantId}::uuid) as changed`.execute(ctx.db);
  return rows[0]?.changed === true;
}

/**
 * Removes one of the tenant's hosts: 'removed', or why not: 'last' (a tenant keeps one host) or
 * 'absent' (not a host of this tenant). The primary's removal promotes the oldest remaining host.
 */
export async function removeTenantHost(
  ctx: TxContext,
  tenantId: string,
  host: string,
): Promise<'removed' | 'last' | 'absent'> {
  const { rows } = await sql<{
    outcome: 'removed' | 'last' | 'absent';
  }>`select tenant_remove_host(${tenantId}::uuid, ${host}) as outcome`.execute(ctx.db);
  return rows[0]!.outcome;
}

/**
 * The web origins the transaction's own tenant lists for cross-origin API clients (CORS,
 * http/cors.ts). Sorted, as stored.
 */
export async function ownCorsOrigins(ctx: TxContext): Promise<string[]> {
  const { rows } = await sql<{
    origins: string[];
  }>`select cors_origins as origins from tenants where id = app_tenant_id()`.execute(ctx.db);
  return rows[0]?.origins ?? [];
}

/**
 * Replaces the transaction's own tenant's origins (never another tenant's: the function writes
 * the transaction's tenant only) and drops the tenant from every process's host cache when the
 * transaction commits (evictTenantHosts), so the next request reads the new list. The caller
 * normalises them (http/origins.ts).
 */
export async function setOwnCorsOrigins(
  ctx: TxContext,
  hosts: HostDirectory,
  origins: readonly string[],
): Promise<void> {
  await sql`select tenant_set_cors_origins(${[...origins]}::text[])`.execute(ctx.db);
  await evictTenantHosts(ctx, hosts, ctx.tenant.id);
}

/** Holds the tenant's row until the transaction ends. */
export async function lockTenant(ctx: TxContext, tenantId: string): Promise<void> {
  await sql`select tenant_lock(${tenantId}::uuid)`.execute(ctx.db);
}

/**
 * Drops the tenant's hosts from every process's resolution cache once the transaction commits:
 * run it in the transaction that suspends the tenant or changes its hosts or origins. Other
 * processes hear the NOTIFY (delivered on commit); this process evicts its own cache as the
 * commit returns, so the request that follows the answer already reads the change, however late
 * its own listener hears the notification. Evicting only after the commit keeps a fill that
 * starts meanwhile from caching the row as it was.
 */
export async function evictTenantHosts(ctx: TxContext, hosts: HostDirectory, tenantId: string): Promise<void> {
  await ctx.db.executeQuery(CompiledQuery.raw(EVICT_TENANT_SQL, [tenantId]));
  ctx.afterCommit(() => hosts.evictTenant(tenantId));
}

/** The operator's override of a tenant's entitlements (framework/entitlements/), or null for none. */
export interface EntitlementOverrideValue {
  features?: string[] | null;
  limits?: Record<string, number | null>;
}

/** Sets (null: clears) one tenant's entitlement override; false when there is no such tenant. */
export async function setTenantEntitlements(
  ctx: TxContext,
  tenantId: string,
  override: EntitlementOverrideValue | null,
): Promise<boolean> {
  const value = override === null ? null : JSON.stringify(override);
  const { rows } = await sql<{
    changed: boolean;
  }>`select tenant_set_entitlements(${tenantId}::uuid, ${value}::jsonb) as changed`.execute(ctx.db);
  return rows[0]?.changed === true;
}

/** One tenant's entitlement override as stored, or null. */
export async function tenantEntitlements(ctx: TxContext, tenantId: string): Promise<EntitlementOverrideValue | null> {
  const row = await ctx.db.selectFrom('tenants').select('entitlements').where('id', '=', tenantId).executeTakeFirst();
  return (row?.entitlements as EntitlementOverrideValue | null | undefined) ?? null;
}
