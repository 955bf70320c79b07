import Type from 'typebox';
import type { FastifyRequest } from 'fastify';
import type { AnyRoute, Config } from '../../../framework/entity/define.ts';
import { defineRoute } from '../../../framework/entity/define.ts';
import { isLocalHost } from '../../../framework/config/rules.ts';
import { setSessionCookie } from '../../../framework/access/sessions.ts';
import { sessionCookie } from '../../../framework/access/session-cookie.ts';
import { problem } from '../../../framework/errors.ts';
import { IssuerClient, refused } from './issuer-client.ts';
import { safeNextPath } from './next-path.ts';
import { signInByAddress } from './sign-in.ts';
import {
  STATE_LIFETIME_SECONDS,
  clearStateCookie,
  openState,
  sealState,
  setStateCookie,
  stateCookie,
  stateKey,
} from './state-cookie.ts';

export const OIDC_START_PATH = '/api/v1/auth/oidc/start';

/**
 * A parameter of the issuer's redirect, which a hand-made or hostile URL may name twice: then it
 * arrives as a list, and the callback refuses it itself (a state that is not this browser's, an
 * authorization response the issuer did not send), clearing the state cookie like every refusal.
 */
const callbackParam = (description: string) =>
  Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())], { description }));

/**
 * Where the issuer sends the browser back: the configured path on the host this request came to,
 * so every tenant host is its own redirect URI (each must be registered at the issuer). https
 * unless the host is a local name, the same rule as mailed links.
 */
function redirectUri(request: FastifyRequest, config: Config): string {
  const host = request.headers.host ?? '';
  const scheme = isLocalHost(host) ? 'http' : 'https';
  let origin: string;
  try {
    origin = new URL(`${scheme}://${host}`).origin;
  } catch {
    throw problem('MALFORMED_REQUEST', 'The Host header is not a host name');
  }
  return `${origin}${config.auth.oidc.redirect_path}`;
}

/**
 * The single sign-on routes, or none at all when no issuer is configured (then they are neither
 * served nor listed in OpenAPI).
 */
export function oidcRoutes(config: Config): readonly AnyRoute[] {
  const settings = config.auth.oidc;
  if (settings.issuer === '') return [];
  const issuer = new IssuerClient(settings);
  const key = stateKey(settings.client_secret);
  const cookieName = stateCookie(config).name;

  const start = defineRoute({
    method: 'GET',
    url: OIDC_START_PATH,
    operationId: 'auth-oidc-start',
    summary: 'Start single sign-on with the configured OpenID provider',
    description: [
      'Sets the `app_oidc` state cookie (state, nonce and PKCE verifier, sealed with AES-256-GCM; HttpOnly, SameSite=Lax,',
      `${STATE_LIFETIME_SECONDS / 60} minutes; Secure and \`__Host-\` prefixed unless server.public_host is a local name) and redirects (302)`,
      "to the issuer's authorization endpoint with an S256 PKCE challenge. `next` is kept when it is a local path",
      '(one leading "/", not "//" or "/\\\\"); otherwise the sign-in lands on /admin.',
    ].join(' '),
    tags: ['auth'],
    access: 'public',
    transaction: 'none',
    schema: {
      querystring: Type.Object({
        next: Type.Optional(Type.String({ description: 'Local path to land on after signing in' })),
      }),
      response: { 302: Type.Null({ description: "Redirect to the issuer's authorization endpoint" }) },
    },
    problems: { 502: 'The issuer could not be reached (OIDC_ISSUER_UNAVAILABLE)' },
    handler: async ({ request, reply, query, services }) => {
      const tenant = request.tenant!;
      const authorization = await issuer.authorizationRequest(redirectUri(request, config));
      const sealed = sealState(key, {
        state: authorization.state,
        nonce: authorization.nonce,
        codeVerifier: authorization.codeVerifier,
        tenantId: tenant.id,
        next: safeNextPath(query.next),
        expiresAt: Math.floor(services.clock.now().getTime() / 1000) + STATE_LIFETIME_SECONDS,
      });
      setStateCookie(reply, config, sealed);
      return reply.redirect(authorization.url.href, 302);
    },
  });

  const callback = defineRoute({
    method: 'GET',
    url: settings.redirect_path,
    operationId: 'auth-oidc-callback',
    summary: 'Finish single sign-on: the issuer redirects the browser here',
    description: [
      'Checks the state cookie and the state parameter, exchanges the code (with the PKCE verifier) at the issuer,',
      "checks the ID token's nonce, requires `email_verified` true and opens a session for the active user this",
      'tenant has at that address (compared case-insensitively), exactly as login does. Nobody is created.',
      'Redirects (302) to the `next` given to the start route, or /admin. The state cookie is single-use and is',
      'cleared by every answer. Refusals: 400 OIDC_STATE_INVALID (state cookie missing, tampered, expired, or not',
      'matching the state parameter); 401 OIDC_REFUSED with a `reason`: issuer_error, code_rejected (for instance a',
      'replayed code), response_invalid, email_missing, email_unverified, unknown_address, user_not_active.',
    ].join(' '),
    tags: ['auth'],
    access: 'public',
    transaction: 'none',
    publishes: ['auth.logged_in'],
    schema: {
      // Issuers add parameters of their own (iss, session_state, ...): accept them all.
      querystring: Type.Object(
        {
          code: callbackParam('The authorization code'),
          state: callbackParam('The state this browser started with'),
          error: callbackParam("The issuer's error code, when it refused the sign-in"),
        },
        { additionalProperties: true },
      ),
      response: { 302: Type.Null({ description: 'Signed in: session cookie set, redirect to the landing path' }) },
    },
    problems: {
      400: [
        'The state cookie missing, tampered, expired or of another host, or the state parameter not the one this',
        'browser started with (OIDC_STATE_INVALID); a request that is no HTTP request (MALFORMED_REQUEST)',
      ].join(' '),
      401: 'Sign-in refused (OIDC_REFUSED, with a reason)',
      502: 'The issuer could not be reached (OIDC_ISSUER_UNAVAILABLE)',
    },
    handler: async ({ request, reply, query, services }) => {
      const tenant = request.tenant!;
      // Single use: whatever happens next, the browser drops the state.
      clearStateCookie(reply, config);
      const sealed = request.cookies[cookieName];
      if (!sealed)
        throw problem(
          'OIDC_STATE_INVALID',
          'No single sign-on was started in this browser, or it took too long; start again',
        );
      const saved = openState(key, sealed, services.clock.now());
      if (!saved || saved.tenantId !== tenant.id) {
        throw problem('OIDC_STATE_INVALID', 'The single sign-on state cookie is invalid or expired; start again');
      }
      if (query.state !== saved.state) {
        throw problem(
          'OIDC_STATE_INVALID',
          "The state returned by the identity provider does not match this browser's sign-in",
        );
      }
      const search = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
      const identity = await issuer.exchange(new URL(`${redirectUri(request, config)}${search}`), saved);
      if (!identity.email) throw refused('email_missing', 'The identity provider returned no address');
      if (!identity.emailVerified)
        throw refused('email_unverified', 'The identity provider has not verified this address');
      const previous = request.cookies[sessionCookie(config).name];
      const { rawSessionId } = await signInByAddress(services, tenant, identity.email, request, previous);
      setSessionCookie(reply, config, rawSessionId);
      return reply.redirect(safeNextPath(saved.next), 302);
    },
  });

  return [start, callback];
}
