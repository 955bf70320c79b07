import Type from 'typebox';
import type { AdminSite } from '../contracts/admin.ts';
import { RouteGuard } from '../access/guard.ts';
import { problem } from '../errors.ts';
import { registerRoute } from '../http/register-route.ts';
import { StreamHeaders, eventStream } from '../live/stream-route.ts';
import { apiRoute } from './api-route.ts';
import { registerAdminPage } from './page.ts';
import { renderTemplate } from './render.ts';
import { LIVE_BADGE_PATH, LIVE_STREAM_PATH, badgeOf, headerBadge } from './live-shell.ts';

/**
 * The admin shell's live changes (docs/admin.md, "Live changes"): one stream per browser, whatever
 * its tabs follow. A page names the lists it follows in its markup (the header's badge, a
 * generated list); assets/live.js in the one tab that leads opens this one connection for the
 * lists of every open tab and relays their events to the others, and the hub (framework/live)
 * carries each list's events on it, named `<the list's stream operation id>:<event>`. What the
 * shell's layout needs of it (the paths, the header's badge) is in live-shell.ts.
 *
 * At most this many lists on one browser's connection: the lists of all its open tabs (each a
 * generated list and the badge's). assets/live.js carries no more (the same number there).
 */
export const MAX_LISTS = 16;
const OPERATION_ID = '[a-z0-9]+(?:-[a-z0-9]+)*';
const OPERATION_IDS = `^${OPERATION_ID}(?:,${OPERATION_ID}){0,${MAX_LISTS - 1}}$`;

const LiveQuery = Type.Object(
  {
    lists: Type.String({
      pattern: OPERATION_IDS,
      description: `The operation ids of the lists' streams, comma-separated (at most ${MAX_LISTS})`,
    }),
    fresh: Type.Optional(
      Type.String({
        pattern: OPERATION_IDS,
        description:
          'Those of the lists that start now whatever the Last-Event-ID: a tab opened since the last connection asked for them, and what came before it is nothing it missed',
      }),
    ),
  },
  { additionalProperties: false },
);

/**
 * The page's stream, and the badge's fragment. Each list a page asks for is admitted by its own
 * stream route's guard (the same tenant, permission and plan checks, built once here), so the
 * connection carries nothing its caller could not follow list by list. A session only: the shell
 * ignores a bearer token.
 */
export function registerLivePages(site: AdminSite): void {
  const { services } = site;
  const guards = new Map<string, RouteGuard>();
  for (const operationId of services.live.operations) {
    const route = apiRoute(services, operationId);
    if (!route) throw new Error(`the live list ${operationId} has no stream route`);
    guards.set(operationId, new RouteGuard(route.access, services.registry, route.feature));
  }
  const badge = badgeOf(site);
  if (badge?.follows && !guards.has(badge.follows.operationId))
    throw new Error(`the admin badge follows ${badge.follows.operationId}, which no module declares among its streams`);
  registerRoute(site.app, services, {
    method: 'GET',
    url: LIVE_STREAM_PATH.slice(site.app.prefix.length),
    operationId: 'admin-live-stream',
    summary: "The lists a browser's admin tabs follow, on one connection (their live changes)",
    access: 'signedIn',
    hidden: true,
    bearer: false,
    schema: {
      headers: StreamHeaders,
      querystring: LiveQuery,
      response: { 200: eventStream("The changes of the page's lists, as server-sent events") },
    },
    handler: async ({ tx, request, reply, query }) => {
      const asked = query as { lists: string; fresh?: string };
      const lists = [...new Set(asked.lists.split(','))];
      for (const list of lists) {
        const guard = guards.get(list);
        if (!guard) throw problem('VALIDATION_FAILED', `There is no list ${list} to follow`);
        guard.admitTenant(tx.tenant);
        guard.admitCaller(tx.session);
      }
      const fresh = new Set(asked.fresh?.split(',') ?? []);
      for (const list of fresh)
        if (!lists.includes(list))
          throw problem('VALIDATION_FAILED', `The list ${list} starts now but is not followed`);
      return services.live.follow(tx, lists, request, reply, fresh);
    },
  });
  if (!badge) return;
  registerAdminPage(site, {
    path: LIVE_BADGE_PATH,
    summary: "The header's badge (a fragment live changes swap in)",
    access: 'signedIn',
    handler: async (ctx) => {
      ctx.reply.type('text/html; charset=utf-8').header('cache-control', 'no-store');
      return renderTemplate('./admin/components/header-badge', await headerBadge(badge, ctx.tx));
    },
  });
}
