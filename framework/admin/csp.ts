import type { FastifyReply, FastifyRequest } from 'fastify';
import { ASSET_PREFIX } from './assets.ts';

/**
 * A host as CSP's host-source grammar takes it (a DNS name or IPv4 address, an optional port).
 * An IPv6 literal has no host-source form; anything else (a Host header with spaces or
 * semicolons) must never be copied into a policy.
 */
const HOST_SOURCE = /^[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?(?::[0-9]{1,5})?$/;

/**
 * The admin shell's Content-Security-Policy for one request. Scripts and style sheets may come
 * from the shell's asset folder only (`<host>/admin/_assets/`), not from the whole origin: the
 * origin also serves uploaded files (`/api/v1/file/public/<id>` answers with the type the uploader
 * declared), and under `script-src 'self'` a public file declared text/javascript would run as a
 * script of the shell if markup were ever injected. The source names the request's own host (and
 * port) with no scheme, so it matches the page's scheme (http on a local name, https behind a
 * proxy) and each tenant's host alike. A Host header that cannot be written as a source gets no
 * source at all: the shell then runs without its script (it works without JavaScript).
 * Inline styles stay allowed for the style htmx injects for its indicators; no inline script.
 */
export function adminContentSecurityPolicy(request: Pick<FastifyRequest, 'headers'>): string {
  const host = String(request.headers.host ?? '')
    .trim()
    .toLowerCase();
  const assets = HOST_SOURCE.test(host) ? `${host}${ASSET_PREFIX}/` : "'none'";
  const styles = HOST_SOURCE.test(host) ? `${assets} 'unsafe-inline'` : "'unsafe-inline'";
  return [
    "default-src 'self'",
    `script-src ${assets}`,
    `style-src ${styles}`,
    "img-src 'self' data:",
    "object-src 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

/** The headers of every shell answer: its own files only (the policy above), no framing, the origin as referrer. */
export function setShellHeaders(request: Pick<FastifyRequest, 'headers'>, reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', adminContentSecurityPolicy(request))
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'strict-origin');
}
