import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction, RouteOptions } from 'fastify';
import type { MetricSeries as Metrics } from '../contracts/services.ts';

/** The operation label of a request no route matched (a 404 ROUTE_NOT_FOUND, a NO_SITE before routing). */
export const UNROUTED = 'unrouted';

/**
 * The operation label of a route: its OpenAPI operation id (admin pages have theirs,
 * `admin-page-get-…`, named after the page's path pattern), else its URL pattern (static assets,
 * the OpenAPI document). Fixed when the route is registered: nothing a request brings reaches it.
 */
export function operationLabel(route: Pick<RouteOptions, 'url' | 'schema'>): string {
  const id = (route.schema as { operationId?: unknown } | undefined)?.operationId;
  return typeof id === 'string' ? id : route.url;
}

type Hook = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void;

/**
 * Counts every answer fastify gives into the duration histogram and the in-flight gauge. Installed
 * before any route: each route gets an onResponse hook with its label bound at registration, and
 * one instance-wide hook counts the requests no route matched. Not installed at all with metrics off.
 */
export function installHttpMetrics(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onRoute', (route) => {
    const operation = operationLabel(route);
    const observe: Hook = (request, reply, done) => {
      metrics.observeRequest(operation, request.method, reply.statusCode, reply.elapsedTime / 1000);
      done();
    };
    const existing = route.onResponse;
    route.onResponse =
      existing === undefined ? [observe] : [...(Array.isArray(existing) ? existing : [existing]), observe];
  });
  // The first hook of every request: the gauge counts it until its response closes, answered or not.
  app.addHook('onRequest', (_request, reply, done) => {
    metrics.httpInFlight.inc();
    reply.raw.once('close', () => metrics.httpInFlight.dec());
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404) metrics.observeRequest(UNROUTED, request.method, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}
