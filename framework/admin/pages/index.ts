import type { AdminSite } from '../page.ts';
import { registerDashboard } from './dashboard.ts';
import { registerHealth } from './health.ts';
import { registerGallery } from './gallery.ts';
import { registerTenantSwitcher } from './tenants.ts';
import { registerRolePages } from './roles.ts';

/**
 * The fixed pages the product names besides login: dashboard, health, gallery, tenant switcher
 * and roles. (The dashboard links a card to its resource's list page when one is served, looked
 * up when the page is asked for, so the order of registration does not matter.)
 */
export function registerFixedPages(site: AdminSite): void {
  registerDashboard(site, site.readinessChecks);
  registerHealth(site, site.readinessChecks);
  registerGallery(site);
  // The switcher and the roles pages read through their modules: served only where the module,
  // and so the permission that guards the page, is installed (else the sidebar reports the entry).
  const { permissions } = site.services.registry;
  if (permissions.has('tenant:manage')) registerTenantSwitcher(site);
  if (permissions.has('role:manage')) registerRolePages(site);
}
