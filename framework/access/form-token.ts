import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isLocalHost } from '../config/rules.ts';
import type { Config } from '../config/schema.ts';
import { problem } from '../errors.ts';
import { sessionCookie } from './session-cookie.ts';

/**
 * CSRF defence of the browser form targets (routes declared with `form: true`): a token in a
 * hidden field that another site cannot know. This comes on top of the cross-site rule every
 * state-changing route gets (cross-site.ts).
 *
 * The token is not a random value the browser must keep beside its session: it is derived from a
 * secret the browser already holds and no other site can read (both cookies are HttpOnly, and
 * __Host- prefixed on a public host, so a sibling subdomain cannot plant one either):
 *
 * - with a session cookie, HMAC-SHA256 keyed by the raw session id (256 random bits that only the
 *   browser holds; the database keeps only their hash). Every form of every page of that session
 *   carries the same token, whatever other cookies the browser lost: a browser restart (which
 *   drops browser-session cookies), single sign-on and an API sign-in all leave a browser with the
 *   session cookie alone, and its first form post passes. A pair minted without that session (for
 *   an anonymous visitor, on another tenant, or chosen by an attacker) does not match it.
 * - without one (the sign-in page, the reset page), HMAC-SHA256 keyed by the `app_csrf` cookie, a
 *   pre-session secret of 256 random bits set as a browser-session cookie, over the tenant's id:
 *   the field never equals the cookie, and a pair minted on one tenant is refused on another.
 *
 * The post is checked against the session cookie it carries when it carries one, else against
 * `app_csrf`: a form rendered before signing in (or signing out) in another tab asks for a reload.
 */
export const FORM_TOKEN_COOKIE = 'app_csrf';
/** The hidden form field that carries the token. */
export const FORM_TOKEN_FIELD = 'csrf';

const SECRET_PATTERN = /^[A-Za-z0-9_-]{43}$/;
const SESSION_PURPOSE = 'tenantry form token: session';
const ANONYMOUS_PURPOSE = 'tenantry form token: anonymous visitor of tenant ';

/** Same rule as the session cookie: prefixed and Secure on a public host, neither on a local name. */
export function formTokenCookie(config: Config): { name: string; secure: boolean } {
  const local = isLocalHost(config.server.public_host);
  return { name: local ? FORM_TOKEN_COOKIE : `__Host-${FORM_TOKEN_COOKIE}`, secure: !local };
}

type TokenRequest = Pick<FastifyRequest, 'cookies'> & { tenant?: { id: string } | undefined };

/** The token a form posted with a session cookie carries: the session's own. */
export function sessionFormToken(rawSessionId: string): string {
  return createHmac('sha256', rawSessionId).update(SESSION_PURPOSE).digest('base64url');
}

/** The token a form posted without a session cookie carries: bound to `app_csrf` and the tenant. */
export function anonymousFormToken(preSessionSecret: string, tenantId: string): string {
  return createHmac('sha256', preSessionSecret)
    .update(ANONYMOUS_PURPOSE + tenantId)
    .digest('base64url');
}

/** What the request's cookies bind a form token to: its session, else its pre-session secret. */
function expectedToken(request: TokenRequest, config: Config): string | undefined {
  const rawSessionId = request.cookies[sessionCookie(config).name];
  if (rawSessionId) return sessionFormToken(rawSessionId);
  const secret = request.cookies[formTokenCookie(config).name];
  if (!secret || !SECRET_PATTERN.test(secret) || !request.tenant) return undefined;
  return anonymousFormToken(secret, request.tenant.id);
}

/** One token per reply: every form of a page, however many times it asks, gets the same one. */
const issued = new WeakMap<FastifyReply, string>();

/**
 * The token for the forms this reply renders. With a session cookie: the session's token, and no
 * cookie is set. Without: bound to the browser's `app_csrf` secret, set first (a browser-session
 * cookie) when the browser has none.
 */
export function issueFormToken(request: TokenRequest, reply: FastifyReply, config: Config): string {
  const already = issued.get(reply);
  if (already) return already;
  let token = expectedToken(request, config);
  if (!token) {
    const { name, secure } = formTokenCookie(config);
    const secret = randomBytes(32).toString('base64url');
    reply.setCookie(name, secret, { path: '/', httpOnly: true, sameSite: 'lax', secure });
    // A request without a tenant renders no form that could post (the host has no site).
    token = anonymousFormToken(secret, request.tenant?.id ?? '');
  }
  issued.set(reply, token);
  return token;
}

/**
 * Checks a form-encoded body's token against the one the request's cookies bind, in constant
 * time, and removes the field so the route's body schema sees only its own fields. Missing or
 * different: 403 AUTH_CROSS_SITE.
 */
export function checkFormToken(request: TokenRequest & Pick<FastifyRequest, 'body'>, config: Config): void {
  const body = request.body as Record<string, unknown> | null | undefined;
  const sent = body && typeof body === 'object' ? body[FORM_TOKEN_FIELD] : undefined;
  if (body && typeof body === 'object') delete body[FORM_TOKEN_FIELD];
  checkSentFormToken(request, sent, config);
}

/**
 * Checks a token a form sent some other way than a form-encoded body (a multipart form's field
 * before its file part: admin/effect-page.ts) as checkFormToken does: 403 AUTH_CROSS_SITE unless
 * it is the one the request's cookies bind.
 */
export function checkSentFormToken(request: TokenRequest, sent: unknown, config: Config): void {
  const expected = expectedToken(request, config);
  if (typeof sent !== 'string' || !expected || !sameToken(sent, expected)) {
    throw problem(
      'AUTH_CROSS_SITE',
      `This form post carries no valid ${FORM_TOKEN_FIELD} token; reload the page and send the form again`,
    );
  }
}

function sameToken(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
