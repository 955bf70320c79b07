import Type from 'typebox';
import { renderTemplate } from '../render.ts';
import type { AdminSite } from '../page.ts';
import type { ReadinessCheck } from '../../http/probes.ts';
import { notFound } from '../../errors.ts';
import { registerCheckedPage } from './checked-page.ts';
import { findCheck, runCheck } from './health-data.ts';
import { deadLetterSummary, type DeadLetterSummary } from '../../events/dead-letters.ts';
import { when } from '../../format.ts';

/**
 * GET /admin/health lists the readiness checks, each loaded by htmx from its own fragment,
 * GET /admin/health/<check>, which runs that one check (the page itself runs none, so one slow
 * check delays only its own line). Without JavaScript each line links to its fragment URL, which
 * answers a whole page for a plain navigation.
 */
export function registerHealth(site: AdminSite, checks: readonly ReadinessCheck[]): void {
  // The list runs no check. The dead letters (installation-wide, not readable by a tenant's
  // transaction) are read before the request's transaction opens, and shown to the operator only.
  registerCheckedPage(site, {
    path: '/admin/health',
    access: 'signedIn',
    summary: 'Readiness checks and dead letters',
    handler: async ({ inTransaction }) => {
      const deadLetters: DeadLetterSummary | undefined = await deadLetterSummary(site.services.db).catch(
        (err: unknown) => {
          site.services.log.warn({ err }, 'admin health: dead letters unreadable');
          return undefined;
        },
      );
      return inTransaction((page) =>
        page.render({
          title: 'Health',
          body: renderTemplate('./admin/pages/health', {
            checks: checks.map((c) => c.name),
            deadLetters:
              page.tx.tenant.isOperator && deadLetters
                ? { ...deadLetters, lastFailedAt: deadLetters.lastFailedAt ? when(deadLetters.lastFailedAt) : null }
                : null,
          }),
        }),
      );
    },
  });
  registerCheckedPage(site, {
    path: '/admin/health/:check',
    access: 'signedIn',
    summary: 'One readiness check',
    schema: { params: Type.Object({ check: Type.String({ maxLength: 100 }) }) },
    handler: async ({ params, inTransaction }) => {
      const check = findCheck(checks, params.check!);
      if (!check) throw notFound();
      const outcome = await runCheck(check);
      if (!outcome.ok)
        site.services.log.warn({ check: outcome.name, error: outcome.error }, 'admin health: readiness check failed');
      return inTransaction((page) => {
        // The reason may name internals (a host, a driver message): the operator sees it, a customer the verdict.
        const shown = page.tx.tenant.isOperator ? outcome : { name: outcome.name, ok: outcome.ok, ms: outcome.ms };
        return page.render({
          title: `Health: ${outcome.name}`,
          body: renderTemplate('./admin/pages/health-check-page', { check: shown }),
          fragment: renderTemplate('./admin/pages/health-check', { check: shown }),
        });
      });
    },
  });
}
