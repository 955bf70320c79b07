import type { TxContext } from '../../framework/entity/define.ts';
import type { Page, PageQuery } from '../../framework/operations/paging.ts';
import { publicOrigin } from '../../framework/config/rules.ts';
import { listTenants, type TenantView } from './tenant-store.ts';

/** A tenant as the switcher lists it: its row, and where its own admin shell answers. */
export interface SwitcherTenant extends TenantView {
  primaryHost: string | null;
  /** The primary host's /admin; null for a tenant with no host. */
  adminUrl: string | null;
}

/**
 * A page of tenants through the tenant module's own list (same paging, sorting and q search as
 * GET /api/v1/tenant/tenants), each with the link to its primary host's /admin. The link keeps
 * the port the operator is using when the host is a local name (a development set-up where every
 * tenant is served on that port); a public host is https on its default port, as mailed links are.
 */
export async function switcherPage(
  tx: TxContext,
  query: PageQuery,
  port: number,
  q = '',
): Promise<Page<SwitcherTenant>> {
  const page = await listTenants(tx, query, q);
  return {
    ...page,
    items: page.items.map((tenant) => {
      const primary = tenant.hosts.find((h) => h.primary) ?? tenant.hosts[0];
      return { ...tenant, primaryHost: primary?.host ?? null, adminUrl: tenantAdminUrl(tenant, port) };
    }),
  };
}

/** The tenant's own /admin on its primary host (its oldest when none is marked); null without a host. */
export function tenantAdminUrl(tenant: TenantView, port: number): string | null {
  const primary = tenant.hosts.find((h) => h.primary) ?? tenant.hosts[0];
  return primary ? `${publicOrigin(primary.host, port)}/admin` : null;
}

/** The port the request reached the service on, from its Host header; the configured port otherwise. */
export function requestPort(hostHeader: string | undefined, configured: number): number {
  const match = /:(\d{1,5})$/.exec(hostHeader ?? '');
  return match ? Number(match[1]) : configured;
}
