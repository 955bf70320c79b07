import type { TSchema } from 'typebox';
import type { AnyRoute, RouteDefinition } from '../entity/define.ts';
import { typeboxValidatorCompiler } from '../http/validation.ts';
import { validationProblem, type ValidationIssue } from '../http/problems.ts';
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
  const input = routeInput(ctx, parts);
  return route.handler({
    ...input,
    params: checkedParams(route, input.params),
    tx: ctx.tx,
    prepared: parts.prepared,
  } as never);
}

type ParamsCheck = (value: unknown) => { value?: unknown; error?: ValidationIssue[] };
const paramsChecks = new WeakMap<RouteDefinition, ParamsCheck>();

/**
 * The path parameters a page hands the route, checked as the route's own path would check them
 * (its params schema, NUL refused): a page may take one from a form field (the host a tenant
 * page removes), and the handler must never see what its API would have refused with 422.
 */
function checkedParams(route: RouteDefinition, params: unknown): unknown {
  const schema = route.schema.params as TSchema | undefined;
  if (!schema) return params;
  let check = paramsChecks.get(route);
  if (!check) {
    check = typeboxValidatorCompiler({
      schema,
      method: route.method,
      url: route.url,
      httpPart: 'params',
    }) as ParamsCheck;
    paramsChecks.set(route, check);
  }
  const result = check(params);
  if (result.error) throw validationProblem(result.error, 'params');
  return result.value ?? params;
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
