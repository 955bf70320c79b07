import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';

/** The header a request id arrives in from a proxy and leaves in on every answer. */
export const REQUEST_ID_HEADER = 'x-request-id';
/** The member of every log line of a request that names it (fastify's requestIdLogLabel). */
export const REQUEST_ID_LOG_LABEL = 'requestId';

// What a proxy's id may look like to be kept: a token that is safe in a log line and a header
// (a UUID, a trace id, nginx's $request_id, a load balancer's Root=… id). Anything else is replaced.
const ACCEPTED = /^[A-Za-z0-9._:;=+/@-]{1,128}$/;

// proxy-addr's named ranges, which server.trust_proxy may use.
const NAMED: Record<string, readonly string[]> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

/**
 * Whether a peer address is one server.trust_proxy trusts to speak for the client: the same rule
 * that decides who may set X-Forwarded-For decides who may name the request id.
 */
export function trustedPeer(trustProxy: string): (address: string | undefined) => boolean {
  const setting = trustProxy.trim();
  if (setting === '' || setting === 'false') return () => false;
  if (setting === 'true') return () => true;
  const list = new BlockList();
  for (const entry of setting
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    for (const range of NAMED[entry] ?? [entry]) {
      const [address, bits] = range.split('/') as [string, string | undefined];
      const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
      if (isIP(address) === 0) continue;
      if (bits === undefined) list.addAddress(address, family);
      else list.addSubnet(address, Number(bits), family);
    }
  }
  return (address) => {
    if (!address) return false;
    // An IPv4 peer on a dual-stack socket shows as ::ffff:a.b.c.d.
    const plain = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
    const family = isIP(plain);
    return family !== 0 && list.check(plain, family === 6 ? 'ipv6' : 'ipv4');
  };
}

/**
 * fastify's genReqId: the X-Request-Id a trusted proxy sent (server.trust_proxy), when it looks
 * like an id; otherwise a new UUID. A client that is not a trusted proxy cannot choose the id its
 * request is logged under.
 */
export function requestIdGenerator(trustProxy: string): (req: IncomingMessage) => string {
  const trusted = trustedPeer(trustProxy);
  return (req) => {
    const sent = req.headers[REQUEST_ID_HEADER];
    if (typeof sent === 'string' && ACCEPTED.test(sent) && trusted(req.socket?.remoteAddress)) return sent;
    return randomUUID();
  };
}

/**
 * The id of the request (or of the request behind the event) whose work is running: set around a
 * route's handler and a subscription's delivery, read where events are written (context/tx.ts), so
 * every event records the request that caused it without each caller passing it along.
 */
const inScope = new AsyncLocalStorage<string>();

/** Runs fn with the request id in scope (none: fn as it is). */
export function withRequestId<T>(requestId: string | null | undefined, fn: () => T): T {
  return requestId ? inScope.run(requestId, fn) : fn();
}

/** The request id in scope, if any. */
export const currentRequestId = (): string | undefined => inScope.getStore();
