import type { AnyRoute, RouteDefinition } from '../entity/define.ts';
import type { Services } from '../contracts/services.ts';
import type { AdminPageContext } from './page.ts';

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
  parts: { params?: unknown; query?: unknown; body?: unknown } = {},
): Promise<unknown> {
  return route.handler({
    tx: ctx.tx,
    request: ctx.request,
    reply: ctx.reply,
    services: ctx.services,
    params: parts.params ?? {},
    query: parts.query ?? {},
    body: parts.body ?? null,
  } as never);
}
