import Type from 'typebox';
import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.ts';
import { problem } from '../errors.ts';
import { registerRoute } from '../http/register-route.ts';

/** Where a browser lands from a tenant host's root: the shell's dashboard (the login page first, when signed out). */
export const ADMIN_HOME = '/admin';

/**
 * Whether a request's Accept header asks for an HTML page: it names text/html (or XHTML) with a
 * weight above zero, as every browser's navigation does. `*` alone, or no header (curl, the API's
 * clients), is no such request.
 */
export function wantsHtml(accept: string | undefined): boolean {
  if (!accept) return false;
  return accept.split(',').some((range) => {
    const [type, ...params] = range.split(';').map((part) => part.trim().toLowerCase());
    if (type !== 'text/html' && type !== 'application/xhtml+xml') return false;
    const q = params.find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

/**
 * GET / on a tenant host: a browser (Accept text/html) is sent to the admin shell; any other
 * client gets the 404 ROUTE_NOT_FOUND problem an unknown path answers, as before. The answer
 * varies with Accept and says so. A host with no tenant is answered before (NO_SITE), as for any
 * path. Hidden from OpenAPI: the API has no root.
 */
export function registerHostRoot(app: FastifyInstance, services: Services): void {
  registerRoute(app, services, {
    method: 'GET',
    url: '/',
    operationId: 'admin-host-root',
    summary: 'A tenant host’s root: a browser goes to the admin shell',
    access: 'public',
    transaction: 'none',
    hidden: true,
    bearer: false,
    schema: { response: { 302: Type.Null({ description: 'A browser: Location is /admin' }) } },
    handler: async ({ request, reply }) => {
      reply.header('vary', 'Accept');
      if (!wantsHtml(request.headers.accept))
        throw problem('ROUTE_NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}`);
      reply.code(302).header('location', ADMIN_HOME);
      return null;
    },
  });
}
