import type { AnyRoute, RouteDefinition } from '../entity/define.ts';
import type { Services } from '../contracts/services.ts';
import type { AdminPageContext, AdminPrepareContext } from './page.ts';

/** The API route with this operation id: an admin page runs its handler, under its access. */
export function apiRoute(services: Pick<Services, 'routes'>, operationId: string): AnyRoute | undefined {
  return services.routes.find((r) => r.route.operationId === operationId)?.route;
}

/**
 * Runs an API route's own handler inside a page's transaction: the same operation, hooks, row
 * access and events as the API. The page must be registered with the route's access (and its
 * `publishes` when it writes), so the guard that let the page in is the route's own.
 */
export function runApiRoute(
  route: RouteDefinition,
  ctx: AdminPageContext,
  parts: { params?: unknown; query?: unknown; body?: unknown; prepared?: unknown } = {},
): Promise<unknown> {
  // A route with a step before its transaction is run only with what its step prepared (the
  // page's beforeTransaction, through prepareApiRoute): inside the page's transaction is too late.
  if (route.beforeTransaction && !('prepared' in parts))
    throw new Error(
      `${route.method} ${route.url} has a step before its transaction: prepare it in the page's beforeTransaction (prepareApiRoute)`,
    );
  return route.handler({ ...routeInput(ctx, parts), tx: ctx.tx, prepared: parts.prepared } as never);
}

/** What a route's handler and its step before the transaction share: the page's request and the parts given. */
function routeInput(
  ctx: AdminPrepareContext | AdminPageContext,
  parts: { params?: unknown; query?: unknown; body?: unknown },
) {
  return {
    request: ctx.request,
    reply: ctx.reply,
    services: ctx.services,
    params: parts.params ?? {},
    query: parts.query ?? {},
    body: parts.body ?? null,
  };
}

/**
 * An API route's step before its transaction (RouteDefinition.beforeTransaction), run from a
 * page's own step (AdminPageDefinition.beforeTransaction) with no transaction open: what it returns
 * is what runApiRoute hands the route's handler as `prepared`. Undefined for a route without one.
 */
export function prepareApiRoute(
  route: RouteDefinition,
  ctx: AdminPrepareContext,
  parts: { params?: unknown; query?: unknown; body?: unknown } = {},
): Promise<unknown> {
  if (!route.beforeTransaction) return Promise.resolve(undefined);
  return route.beforeTransaction({ ...routeInput(ctx, parts), session: ctx.session } as never);
}
