import type { IncomingMessage } from 'node:http';
import { normaliseHost } from '../context/tenant.ts';

// An absolute-form target (RFC 9112 3.2.2), `http://host[:port]/path`: its authority, userinfo left out.
const ABSOLUTE_FORM = /^https?:\/\/([^/?#]*)/i;

/** Whether the request carries more than one Host field line; Node keeps the first and drops the rest. */
export function hasSeveralHosts(rawHeaders: readonly string[]): boolean {
  let seen = false;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length !== 4 || name.toLowerCase() !== 'host') continue;
    if (seen) return true;
    seen = true;
  }
  return false;
}

/**
 * Why the service cannot tell which host a request is for (the tenant comes from Host), as the
 * problem's detail; undefined when it can. RFC 9112 3.2: more than one Host is a 400 (a proxy in
 * front may have routed by another one than the first, which Node keeps). RFC 9112 3.2.2: an
 * absolute-form target names the host, and the router routes its path alone; one naming another
 * host than Host would be answered as Host's tenant.
 */
export function hostRefusal(req: IncomingMessage): string | undefined {
  if (hasSeveralHosts(req.rawHeaders)) return 'The request has more than one Host header';
  const url = req.url ?? '';
  if (url.startsWith('/')) return undefined;
  const authority = ABSOLUTE_FORM.exec(url)?.[1];
  if (authority === undefined) return undefined;
  const target = authority.slice(authority.lastIndexOf('@') + 1);
  if (normaliseHost(target) !== normaliseHost(req.headers.host))
    return 'The request target names another host than the Host header';
  return undefined;
}
