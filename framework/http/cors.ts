import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { TenantRef } from '../context/tenant.ts';
import { declaredMethods } from './methods.ts';
import { addVary } from './vary.ts';

/**
 * Cross-origin browser clients (CORS) of the API: a single-page app served from another origin
 * calls the API with a personal access token (Authorization: Bearer). Its origin must be listed,
 * by the installation (`server.cors_origins`) or by the tenant whose host it calls
 * (`tenants.cors_origins`, set by the tenant's administrator, modules/auth/cors-origins.routes.ts;
 * it travels with the tenant its host resolves to, so a request reads no table for it).
 *
 * For a path under /api/ only:
 * - a preflight (`OPTIONS` with Origin and Access-Control-Request-Method) from a listed origin,
 *   for a method the path declares, is answered 204 with Access-Control-Allow-Origin (that
 *   origin), -Allow-Methods (the path's methods), -Allow-Headers (Authorization, Content-Type,
 *   Idempotency-Key), -Max-Age and Allow. Any other `OPTIONS` (an unlisted origin, a method the
 *   path does not declare, no preflight at all) is what it was: 405 METHOD_NOT_ALLOWED with Allow
 *   (404 on an unknown path), with no CORS header, which a browser takes as a refusal.
 * - any other request from a listed origin gets Access-Control-Allow-Origin and
 *   -Expose-Headers, its refusals (problem documents) included, so the page can read why; one
 *   from an unlisted origin gets no CORS header, and the browser keeps the answer from the page.
 *
 * Never Access-Control-Allow-Credentials: a browser sends no cookie to another origin's API on a
 * page's behalf with CORS, and reads no answer to a request that carried one. Cookies keep the
 * cross-site rule (access/cross-site.ts), which refuses a state-changing request another site
 * sent unless it carries a bearer token; a bearer token is what a cross-origin client uses.
 */

/** The request headers a listed page may send: a bearer token, a JSON body, an idempotency key. */
export const CORS_ALLOWED_HEADERS = 'Authorization, Content-Type, Idempotency-Key';
/** The answer's headers a listed page may read besides the CORS-safelisted ones. */
export const CORS_EXPOSED_HEADERS =
  'Location, ETag, Retry-After, X-Request-Id, Idempotent-Replayed, Content-Disposition, Content-Range';
/** How long a browser may keep a preflight's answer: ten minutes, so a removed origin stops working soon. */
export const CORS_MAX_AGE_SECONDS = 600;
const API_PREFIX = '/api/';

const isApiPath = (url: string): boolean => url.startsWith(API_PREFIX);

const single = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);

/**
 * Whether an answer at this path and tenant differs by Origin, and so says `Vary: Origin`: a path
 * under /api/ where the installation or the tenant lists any origin. The front door (front-door.ts)
 * asks it too, so the 304 it answers itself carries the Vary the hook's answers carry.
 */
export function variesByOrigin(
  installation: readonly string[],
): (url: string, tenant: TenantRef | undefined) => boolean {
  const installed = installation.length > 0;
  return (url, tenant) => isApiPath(url) && (installed || (tenant?.corsOrigins?.length ?? 0) > 0);
}

/**
 * Installs the CORS answers as an onRequest hook. Call after the tenant's resolution (web.ts),
 * whose hook sets request.tenant. `installation` is server.cors_origins, parsed at boot.
 */
export function installCors(app: FastifyInstance, installation: readonly string[]): void {
  const installationOrigins = new Set(installation);
  const listed = (origin: string, tenant: TenantRef | undefined): boolean =>
    installationOrigins.has(origin) || (tenant?.corsOrigins?.includes(origin) ?? false);
  const varies = variesByOrigin(installation);

  // A callback hook: a service or tenant listing no origin pays one lookup per API request.
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    if (!varies(request.url, request.tenant)) return done();
    // An answer that differs by Origin says so, for any cache on the way.
    addVary(reply, 'Origin');
    const origin = single(request.headers.origin)?.toLowerCase();
    if (origin === undefined || !listed(origin, request.tenant)) return done();
    if (request.method !== 'OPTIONS') {
      reply.header('access-control-allow-origin', origin).header('access-control-expose-headers', CORS_EXPOSED_HEADERS);
      return done();
    }
    const asked = single(request.headers['access-control-request-method'])?.toUpperCase();
    const methods = declaredMethods(request);
    // Not a preflight, or one for a method the path does not declare: the 405 (or 404) it always was.
    if (asked === undefined || !methods.includes(asked)) return done();
    reply
      .code(204)
      .header('allow', [...methods, 'OPTIONS'].join(', '))
      .header('access-control-allow-origin', origin)
      .header('access-control-allow-methods', methods.join(', '))
      .header('access-control-allow-headers', CORS_ALLOWED_HEADERS)
      .header('access-control-max-age', String(CORS_MAX_AGE_SECONDS))
      .send();
  });
}
