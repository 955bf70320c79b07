import type { FastifyRequest } from 'fastify';
import { normaliseHost } from '../context/tenant.ts';
import { problem } from '../errors.ts';

/** The methods that change state: every declared route with one of them gets the cross-site rule. */
export const STATE_CHANGING_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Refuses a request a browser sent on behalf of another site (cross-site request forgery). The
 * route wrapper (framework/http/register-route.ts) applies it to every state-changing route before
 * the body is validated: a session cookie is SameSite=Lax, and Lax still sends it with a form post
 * from a sibling subdomain of the same site, so the cookie alone proves nothing.
 * Sec-Fetch-Site is decisive when present: only same-origin (and "none", a request the person
 * made directly) pass; same-site is refused too, because tenants may share a parent domain.
 * Without it, an Origin header must name the host the request was sent to (Origin "null", as
 * sandboxed frames and some redirects send, is refused). A client sending
 * neither header is not a browser acting for a page, and passes.
 */
export function refuseCrossSite(request: Pick<FastifyRequest, 'headers'>): void {
  const fetchSite = header(request, 'sec-fetch-site');
  if (fetchSite !== undefined) {
    if (fetchSite === 'same-origin' || fetchSite === 'none') return;
    throw crossSite(`Sec-Fetch-Site is ${fetchSite}`);
  }
  const origin = header(request, 'origin');
  if (origin === undefined) return;
  let originHost: string;
  try {
    originHost = new URL(origin).host.toLowerCase();
  } catch {
    throw crossSite('the Origin header is not a URL');
  }
  const host = (header(request, 'host') ?? '').trim().toLowerCase();
  // Hosts are compared without ports: a tenant is its host name, whatever port it is reached on.
  if (originHost === '' || normaliseHost(originHost) !== normaliseHost(host)) {
    throw crossSite('the Origin header names another site');
  }
}

function header(request: Pick<FastifyRequest, 'headers'>, name: string): string | undefined {
  const value = request.headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined ? undefined : first.trim().toLowerCase();
}

const crossSite = (why: string) =>
  problem('AUTH_CROSS_SITE', `This request was sent from another site (${why}) and is refused`);
