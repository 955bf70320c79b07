import { registerAdminPage, renderTemplate, type AdminSite } from '../../framework/admin/index.ts';
import type { PageQuery } from '../../framework/operations/paging.ts';
import { TenantListQuery } from './tenant.schemas.ts';
import { requestPort, switcherPage } from './tenants.admin-data.ts';

/**
 * GET /admin/tenant/tenants, the operator's tenant switcher: guarded like GET /api/v1/tenant/tenants
 * (tenant:manage, an operator permission, so a customer host answers 403 AUTH_NOT_OPERATOR before
 * any role is read), paged and sorted with the same parameters, read through the tenant module's list.
 * Contributed to the admin shell through the module's `admin.pages` (index.ts).
 */
export function registerTenantSwitcher(site: AdminSite): void {
  registerAdminPage(site, {
    path: '/admin/tenant/tenants',
    access: { permission: 'tenant:manage' },
    summary: 'Tenant switcher',
    schema: { querystring: TenantListQuery },
    handler: async (page) => {
      const query = page.query as unknown as PageQuery;
      const port = requestPort(page.request.headers.host, site.services.config.server.port);
      const tenants = await switcherPage(page.tx, query, port);
      const href = (params: Record<string, string>) => `/admin/tenant/tenants?${new URLSearchParams({ limit: String(query.limit), ...params })}`;
      const body = renderTemplate('./admin/pages/tenants', {
        page: tenants,
        sorted: { [query.sort.replace(/^-/, '')]: query.sort.startsWith('-') ? 'descending' : 'ascending' },
        sortHref: (field: string) => href({ sort: query.sort === field ? `-${field}` : field }),
        nextHref: tenants.next ? href({ sort: query.sort, after: tenants.next }) : null,
      });
      return page.render({ title: 'Tenants', body });
    },
  });
}
