import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { AnyRoute, EarlyRequest, NoTxRouteDefinition } from '../entity/define.ts';
import type { Services } from '../services.ts';
import { normaliseHost } from '../context/tenant.ts';
import { SECURITY_HEADERS } from './problems.ts';
import { variesByOrigin } from './cors.ts';
import { hasSeveralHosts } from './host-header.ts';
import { parseOriginList } from './origins.ts';
import { REQUEST_ID_HEADER, REQUEST_ID_LOG_LABEL, requestIdGenerator } from '../observability/request-id.ts';

/**
 * The front door: answers the routes' early answers (the public read's 304 from the validator
 * cache) in the server's request listener, before fastify builds its request and reply, runs
 * routing, the hooks and the send pipeline, which cost the 304 more than half of its CPU
 * (docs/performance-log.md). It answers only what the router would route and answer the same:
 *
 * - a GET or HEAD whose path has no query string and matches a route segment for segment, each
 *   parameter a plain segment the router would pass on undecoded and within its length limit;
 * - at a host whose tenant is already cached (what the tenant hook would resolve, with no wait);
 * - with the route's earlyAnswer, and the headers every answer carries (SECURITY_HEADERS, and the
 *   request id, X-Request-Id, made as fastify's genReqId makes it), `Vary: Origin` where the CORS
 *   hook (cors.ts) would say it (an /api/ path where the installation or the tenant lists an
 *   origin), and to a HEAD the `Content-Length: 0` fastify's HEAD route adds to an answer without a body.
 *
 * test/framework/front-door-answers-as-fastify.test.ts sends a recorded set of requests through the
 * app with the door and without it and finds every status, header and body the same.
 *
 * Anything else — a percent-encoded or over-long segment, a trailing slash, an unknown host, two Host headers, a
 * request with an Origin (a cross-origin page's, whose CORS headers the fastify hook decides), an
 * earlyAnswer that declines or throws, a server that is closing — goes to fastify, where the
 * route's first hook asks the same earlyAnswer. At log level info, where fastify logs each
 * request, an answer here logs one `request completed` line.
 */

// What find-my-way hands a parameter over as it is: unreserved characters, no percent-encoding;
// fastify's default maxParamLength is 100.
const PLAIN_SEGMENT = /^[A-Za-z0-9._~-]{1,100}$/;

type Segment = string | { param: string };
interface Door {
  segments: Segment[];
  earlyAnswer: NonNullable<NoTxRouteDefinition['earlyAnswer']>;
  /** The route's operation id: the label its answers are counted under (metrics on). */
  operation: string;
}

export type FrontDoor = (req: IncomingMessage, res: ServerResponse) => boolean;

export function frontDoor(
  routes: readonly AnyRoute[],
  services: Services,
  logger: FastifyBaseLogger | undefined,
  isClosing: () => boolean,
): FrontDoor | undefined {
  const log = logger as (FastifyBaseLogger & { isLevelEnabled?(level: string): boolean }) | undefined;
  const doors: Door[] = [];
  for (const route of routes) {
    if (route.access !== 'public' || route.transaction !== 'none' || route.method !== 'GET' || !route.earlyAnswer)
      continue;
    const segments = route.url
      .split('/')
      .map((part): Segment => (part.startsWith(':') ? { param: part.slice(1) } : part));
    doors.push({ segments, earlyAnswer: route.earlyAnswer, operation: route.operationId });
  }
  if (doors.length === 0) return undefined;
  const requestIdOf = requestIdGenerator(services.config.server.trust_proxy);
  const listed = parseOriginList(services.config.server.cors_origins);
  const varies = variesByOrigin('origins' in listed ? listed.origins : []);

  const match = (door: Door, parts: string[]): Record<string, string> | undefined => {
    if (parts.length !== door.segments.length) return undefined;
    const params: Record<string, string> = {};
    for (let i = 0; i < parts.length; i++) {
      const segment = door.segments[i]!;
      if (typeof segment === 'string') {
        if (parts[i] !== segment) return undefined;
      } else {
        if (!PLAIN_SEGMENT.test(parts[i]!)) return undefined;
        params[segment.param] = parts[i]!;
      }
    }
    return params;
  };

  return (req, res) => {
    const { method, url, headers } = req;
    if (
      (method !== 'GET' && method !== 'HEAD') ||
      !url ||
      url.includes('?') ||
      headers.host === undefined ||
      // A page of another origin: the CORS hook (cors.ts) decides the answer's headers.
      headers.origin !== undefined ||
      isClosing()
    )
      return false;
    const tenant = services.hosts.cached(normaliseHost(headers.host));
    if (!tenant) return false;
    // Its answers count in the duration histogram like fastify's (metrics on; no clock read otherwise).
    const begun = services.metrics ? performance.now() : 0;
    const parts = url.split('/');
    for (const door of doors) {
      const params = match(door, parts);
      if (!params) continue;
      // Node keeps the first of two Host headers: fastify's hook refuses such a request (host-header.ts).
      if (hasSeveralHosts(req.rawHeaders)) return false;
      const request: EarlyRequest = { method, headers, params, tenant };
      let answer: ReturnType<Door['earlyAnswer']>;
      try {
        answer = door.earlyAnswer(request, services);
      } catch {
        return false;
      }
      if (!answer) return false;
      const started = log?.isLevelEnabled?.('info') ? performance.now() : undefined;
      const requestId = requestIdOf(req);
      const head: Record<string, string> = { ...answer.headers, ...SECURITY_HEADERS, [REQUEST_ID_HEADER]: requestId };
      // As fastify's HEAD route says of an answer without a body (its 304 included).
      if (method === 'HEAD') head['content-length'] = '0';
      // An answer a cache may keep says what it varies by, as the router's 304 does.
      if (varies(url, tenant)) head.vary = 'Origin';
      res.writeHead(answer.status, head);
      res.end();
      services.metrics?.observeRequest(door.operation, method, answer.status, (performance.now() - begun) / 1000);
      if (started !== undefined) {
        const req = {
          method,
          url,
          host: headers.host,
          remoteAddress: res.socket?.remoteAddress,
          remotePort: res.socket?.remotePort,
        };
        log!.info(
          {
            [REQUEST_ID_LOG_LABEL]: requestId,
            req,
            res: { statusCode: answer.status },
            responseTime: performance.now() - started,
          },
          'request completed',
        );
      }
      return true;
    }
    return false;
  };
}
