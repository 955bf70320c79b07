import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isLocalHost } from '../config/rules.ts';
import type { Config } from '../config/schema.ts';
import { problem } from '../errors.ts';

/**
 * CSRF defence of the browser form targets (routes declared with `form: true`): a double-submit
 * token. The page that renders a form sets a random token in a cookie and repeats it in a hidden
 * field; a form-encoded post must carry the field, and it must equal the cookie. Another site can
 * make a browser post a form, but can neither read this cookie nor set it (HttpOnly, and
 * __Host- prefixed on a public host, so a sibling subdomain cannot plant one), so it cannot know
 * the value to put in the field. This comes on top of the cross-site rule every state-changing
 * route gets (cross-site.ts).
 */
export const FORM_TOKEN_COOKIE = 'app_csrf';
/** The hidden form field that repeats the cookie's token. */
export const FORM_TOKEN_FIELD = 'csrf';

const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** Same rule as the session cookie: prefixed and Secure on a public host, neither on a local name. */
export function formTokenCookie(config: Config): { name: string; secure: boolean } {
  const local = isLocalHost(config.server.public_host);
  return { name: local ? FORM_TOKEN_COOKIE : `__Host-${FORM_TOKEN_COOKIE}`, secure: !local };
}

/**
 * The token for a form this reply renders: the browser's current one when it has one (so two open
 * forms both stay valid), else a fresh 256-bit one, set as a browser-session cookie.
 */
export function issueFormToken(request: Pick<FastifyRequest, 'cookies'>, reply: FastifyReply, config: Config): string {
  const { name, secure } = formTokenCookie(config);
  const current = request.cookies[name];
  if (current && TOKEN_PATTERN.test(current)) return current;
  const token = randomBytes(32).toString('base64url');
  reply.setCookie(name, token, { path: '/', httpOnly: true, sameSite: 'lax', secure });
  return token;
}

/**
 * Checks a form-encoded body's token against the cookie, in constant time, and removes the field
 * so the route's body schema sees only its own fields. Missing or different: 403 AUTH_CROSS_SITE.
 */
export function checkFormToken(request: Pick<FastifyRequest, 'cookies' | 'body'>, config: Config): void {
  const body = request.body as Record<string, unknown> | null | undefined;
  const sent = body && typeof body === 'object' ? body[FORM_TOKEN_FIELD] : undefined;
  if (body && typeof body === 'object') delete body[FORM_TOKEN_FIELD];
  const expected = request.cookies[formTokenCookie(config).name];
  if (typeof sent !== 'string' || !expected || !sameToken(sent, expected)) {
    throw problem('AUTH_CROSS_SITE', `This form post carries no valid ${FORM_TOKEN_FIELD} token; reload the page and send the form again`);
  }
}

function sameToken(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
