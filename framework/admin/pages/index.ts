import type { AdminSite } from '../page.ts';
import { registerDashboard } from './dashboard.ts';
import { registerHealth } from './health.ts';
import { registerGallery } from './gallery.ts';
import { registerActivityPage } from './activity.ts';

/**
 * The framework's fixed pages besides login: dashboard, health, gallery and the tenant's activity. The modules add
 * theirs (the tenant switcher, the roles pages) through ModuleDefinition.admin.pages. (The
 * dashboard links a card to its resource's list page when one is served, looked up when the page
 * is asked for, so the order of registration does not matter.)
 */
export function registerFixedPages(site: AdminSite): void {
  registerDashboard(site, site.readinessChecks);
  registerHealth(site, site.readinessChecks);
  registerGallery(site);
  registerActivityPage(site);
}
