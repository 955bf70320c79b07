import type { AdminSite } from '../page.ts';
import type { ReadinessCheck } from '../../http/probes.ts';
import { registerDashboard } from './dashboard.ts';
import { registerHealth } from './health.ts';
import { registerTenantSwitcher } from './tenants.ts';
import { registerRolePages } from './roles.ts';

/**
 * The fixed pages the product names besides login: dashboard, health, gallery, tenant switcher
 * and roles. Register after the generated pages: the dashboard links a card to its list page only
 * where one is served.
 */
export function registerFixedPages(site: AdminSite, checks: readonly ReadinessCheck[]): void {
  registerDashboard(site, checks);
  registerHealth(site, checks);
  registerTenantSwitcher(site);
  registerRolePages(site);
}
