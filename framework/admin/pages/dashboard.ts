import { renderTemplate } from '../render.ts';
import type { AdminSite } from '../page.ts';
import type { ReadinessCheck } from '../../http/probes.ts';
import { registerCheckedPage } from './checked-page.ts';
import { dashboardCards } from './dashboard-data.ts';
import { statusChart } from './status-chart.ts';
import { runCheck, type CheckOutcome } from './health-data.ts';

/**
 * GET /admin: a card per resource the caller may read with the count its list reports, and for a
 * resource with an enum status a bar chart of its rows per status (a
 * singleton's card leads to its page, the subscription's to /admin/billing/subscription), and, for
 * the operator alone, whether the database check passes: a customer learns nothing from it. The
 * check runs first, with no transaction open (it uses the pool); the counts then run one after the
 * other in the request's one transaction.
 */
export function registerDashboard(site: AdminSite, checks: readonly ReadinessCheck[]): void {
  const database = checks.find((c) => c.name === 'database');
  const checkDatabase = (): Promise<CheckOutcome> =>
    database ? runCheck(database) : Promise.resolve({ name: 'database', ok: false, ms: 0 });
  registerCheckedPage(site, {
    path: '/admin',
    access: 'signedIn',
    summary: 'Dashboard',
    handler: async ({ tenant, inTransaction }) => {
      const outcome = tenant.isOperator ? await checkDatabase() : null;
      if (outcome && !outcome.ok)
        site.services.log.warn({ check: 'database', error: outcome.error }, 'admin dashboard: database check failed');
      return inTransaction(async (page) => {
        const cards = (await dashboardCards(page.tx, site.services)).map((card) => ({
          ...card,
          href: adminPagePath(site, card.key),
          // A resource with an enum status: its rows per status, drawn here (status-chart.ts).
          chart: card.statuses ? statusChart(`${card.labelPlural} by status`, card.statuses) : null,
        }));
        return page.render({
          title: 'Dashboard',
          body: renderTemplate('./admin/pages/dashboard', { cards, database: outcome }),
        });
      });
    },
  });
}

/**
 * The page a card links to, when the shell serves one: a resource's generated list, or a
 * singleton's own page at the same place (the subscription's).
 */
function adminPagePath(site: AdminSite, key: string): string | null {
  const entity = site.services.registry.entity(key);
  const path = entity.names.path.replace(/^\/api\/v1\//, '/admin/');
  return site.pages.has(path) ? path : null;
}
