import { renderTemplate } from '../render.ts';
import type { AdminSite } from '../page.ts';
import type { ReadinessCheck } from '../../http/probes.ts';
import { registerCheckedPage } from './checked-page.ts';
import { dashboardCards } from './dashboard-data.ts';
import { runCheck } from './health-data.ts';

/**
 * GET /admin: a card per resource the caller may read with the count its list reports, and
 * whether the database check passes. The check runs first, with no transaction open (it uses the
 * pool); the counts then run one after the other in the request's one transaction.
 */
export function registerDashboard(site: AdminSite, checks: readonly ReadinessCheck[]): void {
  const database = checks.find((c) => c.name === 'database');
  registerCheckedPage(site, {
    path: '/admin',
    access: 'signedIn',
    summary: 'Dashboard',
    handler: async ({ inTransaction }) => {
      const outcome = database ? await runCheck(database) : { name: 'database', ok: false, ms: 0 };
      if (!outcome.ok)
        site.services.log.warn({ check: 'database', error: outcome.error }, 'admin dashboard: database check failed');
      return inTransaction(async (page) => {
        const cards = (await dashboardCards(page.tx, site.services)).map((card) => ({
          ...card,
          href: card.count === null ? null : adminListPath(site, card.key),
        }));
        return page.render({
          title: 'Dashboard',
          body: renderTemplate('./admin/pages/dashboard', { cards, database: outcome }),
        });
      });
    },
  });
}

/** The generated list page of a resource, when the shell serves one (a card links to it). */
function adminListPath(site: AdminSite, key: string): string | null {
  const entity = site.services.registry.entity(key);
  const path = entity.names.path.replace(/^\/api\/v1\//, '/admin/');
  return site.pages.has(path) ? path : null;
}
