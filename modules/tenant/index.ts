import { defineModule } from '../../framework/entity/define.ts';
import { tenantRoutes } from './tenant.routes.ts';
import { registerTenantSwitcher } from './tenants.admin.ts';
import { EXPORT_REQUESTED, exportPurge, exportQueue, exportRequested, exportRoutes } from './export.routes.ts';

/**
 * The control plane: customers, their hosts, suspension and the first administrator. Every route
 * needs tenant:manage, an operator permission: refused (403 AUTH_NOT_OPERATOR) at every tenant
 * but the operator's. The operator tenant's seeded admin role holds it through the wildcard; no
 * customer role can be granted it.
 */
export const tenantModule = defineModule({
  name: 'tenant',
  description: 'Customers, their hosts, suspension, first administrator',
  permissions: [
    { name: 'tenant:manage', description: 'Tenant routes and the Tenants navigation entry', operator: true },
    {
      name: 'tenant:export',
      description: "Export the whole tenant's data (POST /api/v1/tenant/export) and download the archive",
    },
  ],
  events: [
    'tenant.created',
    'tenant.host_added',
    'tenant.host_removed',
    'tenant.suspended',
    'tenant.resumed',
    EXPORT_REQUESTED,
  ],
  // The customer sees these in its own activity, as done by the operator (the payload's id is the tenant's).
  operatorEventsAbout: {
    'tenant.host_added': 'id',
    'tenant.host_removed': 'id',
    'tenant.suspended': 'id',
    'tenant.resumed': 'id',
  },
  routes: [...tenantRoutes, ...exportRoutes],
  // A tenant's export runs as a job (framework/bulk/tenant-export/), its archive purged once its link expires.
  subscriptions: [exportRequested],
  queues: [exportQueue],
  jobs: [exportPurge],
  admin: {
    label: 'Tenants',
    // The tenant switcher replaces the generated pages: tenants are made and changed through the API.
    pages: [registerTenantSwitcher],
    sidebar: [{ label: 'Tenants', path: '/admin/tenant/tenants', order: 60 }],
    resourcePages: false,
  },
});
