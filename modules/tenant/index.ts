import { defineModule } from '../../framework/entity/define.ts';
import { tenantRoutes } from './tenant.routes.ts';

/**
 * The control plane: customers, their hosts, suspension and the first administrator. Every route
 * needs tenant:manage, an operator permission: refused (403 AUTH_NOT_OPERATOR) at every tenant
 * but the operator's. The operator tenant's seeded admin role holds it, and billing:catalog,
 * through the wildcard; no customer role can be granted either.
 */
export const tenantModule = defineModule({
  name: 'tenant',
  description: 'Customers, their hosts, suspension, first administrator',
  permissions: [
    { name: 'tenant:manage', description: 'Tenant routes and the Tenants navigation entry', operator: true },
    // The price list's write permission is an operator's. Declared here until a billing module
    // declares it (then this line goes: a permission declared twice stops startup).
    { name: 'billing:catalog', description: 'Plan writes (the operator-owned price list)', operator: true },
  ],
  events: ['tenant.created', 'tenant.host_added', 'tenant.suspended'],
  routes: tenantRoutes,
});
