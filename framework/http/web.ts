import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyServerFactory,
} from 'fastify';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import multipart from '@fastify/multipart';
import type { Services } from '../services.ts';
import type { AnyRoute } from '../entity/define.ts';
import type { TenantRef } from '../context/tenant.ts';
import { normaliseHost } from '../context/tenant.ts';
import {
  SECURITY_HEADERS,
  clientErrorProblem,
  frameworkErrorProblem,
  installProblemHandlers,
  sendProblem,
} from './problems.ts';
import { typeboxValidatorCompiler } from './validation.ts';
import { cachedSerializerFactory } from './serializer-cache.ts';
import { DEFAULT_BODY_LIMIT, registerRoute } from './register-route.ts';
import { readinessChecks, registerProbes, type ReadinessCheck } from './probes.ts';
import { registerOpenApi } from '../openapi/document.ts';
import { requestLogSerializers } from './log-redaction.ts';
import { lazyRequestLogger } from './request-logger.ts';
import { frontDoor } from './front-door.ts';
import { hostRefusal } from './host-header.ts';
import { batchMemberOf } from '../bulk/batch-member.ts';
import { batchRoute } from '../bulk/batch.ts';
import { BatchRoutes } from '../bulk/batch-routes.ts';
import { importStatusRoute } from '../bulk/imports/import-routes.ts';
import { installCors } from './cors.ts';
import { parseOriginList } from './origins.ts';
import { refuseFramingOfHtml } from './frame-refusal.ts';
import { createServer, type IncomingMessage, type ServerOptions, type ServerResponse } from 'node:http';
import { catalogRoute } from '../catalog/catalog.ts';
import { activityOf, activityRoute } from '../events/activity.ts';
import { registerAdmin } from '../admin/index.ts';
import { adminFrameworkError, isAdminAddress } from '../admin/errors.ts';
import { notFound, problem } from '../errors.ts';
import { REQUEST_ID_HEADER, REQUEST_ID_LOG_LABEL, requestIdGenerator } from '../observability/request-id.ts';
import { installHttpMetrics } from '../observability/http-metrics.ts';
import { fastifyTracingPlugin } from '../observability/tracing.ts';
import { CURRENCY_FORMAT, MONEY_FORMAT } from '../entity/money.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The tenant the Host header resolved to; absent only on the probes. */
    tenant?: TenantRef;
  }
  interface FastifyContextConfig {
    /** A host with no tenant answers 404 NOT_FOUND here, not NO_SITE (RouteDefinition.hidesNoSite). */
    hidesNoSite?: boolean;
  }
}

export interface WebOptions {
  logger?: FastifyBaseLogger;
  readinessChecks?: ReadinessCheck[];
}

/** Maps server.trust_proxy to fastify's option: booleans as words, anything else as proxy-addr's list. */
export function trustProxySetting(value: string): boolean | string {
  const trimmed = value.trim();
  if (trimmed === '' || trimmed === 'false') return false;
  if (trimmed === 'true') return true;
  return trimmed;
}

const GLOBAL_PATHS = new Set(['/health', '/ready']);

/** The router's options: fastify's, and the batch's table of routes (bulk/batch-routes.ts), which resolves paths alike. */
const ROUTER_OPTIONS = { ignoreTrailingSlash: true } as const;

export async function buildWeb(services: Services, options: WebOptions = {}): Promise<FastifyInstance> {
  let closing = false;
  const serverFactory = frontDoorServer(services, options.logger, () => closing);
  const app = Fastify({
    ...(serverFactory ? { serverFactory } : {}),
    ...(options.logger
      ? {
          loggerInstance: options.logger.child({}, { serializers: requestLogSerializers }),
          childLoggerFactory: lazyRequestLogger,
        }
      : { logger: false }),
    trustProxy: trustProxySetting(services.config.server.trust_proxy),
    // X-Request-Id from a trusted proxy, else a new UUID; named `requestId` in every log line.
    genReqId: requestIdGenerator(services.config.server.trust_proxy),
    logController: new LogController({ requestIdLogLabel: REQUEST_ID_LOG_LABEL }),
    bodyLimit: DEFAULT_BODY_LIMIT,
    // Stopping (SIGTERM): no new connections; a request that still arrives on an open one is
    // served, and every answer from then on says Connection: close (the onSend hook below), so each
    // keep-alive connection ends with its answer; idle ones are closed at once. A load balancer
    // sees connections close and refused, never an error.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    ajv: { customOptions: { removeAdditional: false } },
    // The serializer's schema compiler (fast-json-stringify, Ajv inside for unions) is told of the
    // framework's own formats, which it would otherwise warn about on every list answer.
    serializerOpts: { ajv: { formats: { [MONEY_FORMAT]: true, [CURRENCY_FORMAT]: true } } },
    // Each distinct response schema compiled once per process (serializer-cache.ts).
    schemaController: { compilersFactory: { buildSerializer: cachedSerializerFactory } },
    routerOptions: ROUTER_OPTIONS,
    // Node would answer a request without Host with an empty 400 of its own; ours is a problem.
    http: { requireHostHeader: false },
    // Under /admin a person reads the answer: a page, not a problem document (admin/errors.ts).
    frameworkErrors: (err, request, reply) =>
      isAdminAddress(request.url)
        ? adminFrameworkError(err, request, reply)
        : frameworkErrorProblem(err, request, reply),
    clientErrorHandler: clientErrorProblem,
  });
  app.addHook('preClose', (done) => {
    closing = true;
    // Open streams end cleanly, so the server's close does not wait on them; clients reconnect
    // (to another process) with their last event id and miss nothing.
    services.live.close().then(() => done(), done);
  });
  // Before any hook or route: the request span (tracing on) and the HTTP series (metrics on).
  const tracing = fastifyTracingPlugin();
  if (tracing) await app.register(tracing);
  if (services.metrics) installHttpMetrics(app, services.metrics);
  app.setValidatorCompiler(typeboxValidatorCompiler);
  installProblemHandlers(app);
  // The routes a batch's requests may name, and the operations they call directly, built as every route is registered.
  const batchRoutes = new BatchRoutes(ROUTER_OPTIONS);
  app.addHook('onRoute', (route) => batchRoutes.registered(route));
  // Bodies are JSON (forms and multipart only where a route declares them): without fastify's
  // built-in text/plain parser, a text/plain body is 415 UNSUPPORTED_MEDIA_TYPE before validation.
  app.removeContentTypeParser('text/plain');
  // Every answer, problems and the NO_SITE refusal included; every HTML answer refuses framing.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    reply.headers(SECURITY_HEADERS);
    reply.header(REQUEST_ID_HEADER, request.id);
    refuseFramingOfHtml(reply);
    done(null, payload);
  });
  await app.register(cookie);
  await app.register(formbody);

  // Tenant resolution comes before everything else, for every route including unknown ones. A
  // callback hook: a host already cached (nearly every request) costs no promise and no tick.
  app.addHook('onRequest', (request, reply, done) => {
    // HTTP/1.1 requires Host (RFC 9112, 3.2); an HTTP/1.0 client may still reach the probes without.
    if (request.headers.host === undefined && request.raw.httpVersion !== '1.0') {
      sendProblem(reply, problem('MALFORMED_REQUEST', 'The request has no Host header'));
      return;
    }
    // Two Host headers, or an absolute-form target naming another host: which tenant is meant is unclear.
    const unclear = hostRefusal(request.raw);
    if (unclear !== undefined) {
      sendProblem(reply, problem('MALFORMED_REQUEST', unclear));
      return;
    }
    const query = request.url.indexOf('?');
    if (GLOBAL_PATHS.has(query === -1 ? request.url : request.url.slice(0, query))) return done();
    const host = normaliseHost(request.headers.host);
    const known = services.hosts.cached(host);
    if (known) {
      request.tenant = known;
      return done();
    }
    // A batch's request (bulk/batch.ts) is at the batch's host, inside its transaction, where the
    // pool may not be reached: it takes the batch's tenant should the host have left the cache.
    const member = batchMemberOf(request.headers);
    if (member) {
      request.tenant = member.tenant;
      return done();
    }
    services.hosts.resolve(host).then((tenant) => {
      if (!tenant) {
        sendProblem(
          reply,
          request.routeOptions.config.hidesNoSite ? notFound() : problem('NO_SITE', 'There is no site at this host'),
        );
        return;
      }
      request.tenant = tenant;
      done();
    }, done);
  });

  // Then the answers to cross-origin pages (CORS), which read the tenant's own origins.
  const cors = parseOriginList(services.config.server.cors_origins);
  installCors(app, 'origins' in cors ? cors.origins : []);

  // OpenAPI first: @fastify/swagger documents the routes registered after it.
  await registerOpenApi(app, services);
  const checks = readinessChecks(services, options.readinessChecks ?? []);
  registerProbes(app, services, checks);
  const takesForm = (route: AnyRoute) => route.transaction === 'none' && route.multipart !== undefined;
  for (const { route, entity } of services.routes)
    if (!takesForm(route)) registerRoute(app, services, route, entity, batchRoutes);
  // Multipart parsing exists only in this scope, around the routes that declare it: elsewhere a
  // form is an unsupported media type (415) before any handler runs. The form's size is bounded by
  // the route's body limit (register-route.ts), so the plugin sets no per-file limit of its own.
  await app.register(async (scope) => {
    await scope.register(multipart, { limits: { fileSize: Number.POSITIVE_INFINITY } });
    for (const { route, entity } of services.routes)
      if (takesForm(route)) registerRoute(scope, services, route, entity);
  });
  registerRoute(app, services, catalogRoute(services.registry));
  registerRoute(app, services, activityRoute(activityOf(services.registry)));
  registerRoute(app, services, batchRoute(services.registry, services.routes, batchRoutes));
  registerRoute(app, services, importStatusRoute(services.registry));
  // The admin shell (HTML pages under /admin), built from the same registry and route wrapper.
  await registerAdmin(app, services, { readinessChecks: checks });
  return app;
}

/**
 * The HTTP server, made by fastify's documented `serverFactory`: the front door (front-door.ts)
 * sees each request first, and a request it does not answer goes to fastify's handler unchanged.
 * Made as fastify would make it (its `http` options, timeouts and socket limit).
 */
export function frontDoorServer(
  services: Services,
  logger: FastifyBaseLogger | undefined,
  isClosing: () => boolean,
): FastifyServerFactory | undefined {
  const door = frontDoor(
    services.routes.map(({ route }) => route),
    services,
    logger,
    isClosing,
  );
  if (!door) return undefined;
  return (handler, options) => {
    const settings = options as typeof options & {
      http?: ServerOptions;
      keepAliveTimeout?: number;
      requestTimeout?: number;
      connectionTimeout?: number;
      maxRequestsPerSocket?: number;
    };
    const server = createServer(settings.http ?? {}, (req: IncomingMessage, res: ServerResponse) => {
      if (!door(req, res)) handler(req, res);
    });
    if (settings.keepAliveTimeout !== undefined) server.keepAliveTimeout = settings.keepAliveTimeout;
    if (settings.requestTimeout !== undefined) server.requestTimeout = settings.requestTimeout;
    if (settings.connectionTimeout !== undefined) server.setTimeout(settings.connectionTimeout);
    if ((settings.maxRequestsPerSocket ?? 0) > 0) server.maxRequestsPerSocket = settings.maxRequestsPerSocket!;
    return server;
  };
}
