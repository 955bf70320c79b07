import { defineRoute } from '../../framework/entity/define.ts';
import { clearSessionCookie, endSession } from '../../framework/access/sessions.ts';
import { sessionCookie } from '../../framework/access/session-cookie.ts';
import { problem } from '../../framework/errors.ts';
import { IdentitySchema, loadIdentity } from './identity.ts';
import { NoContent } from './schemas.ts';
import './auth-tables.ts';

export const logoutRoute = defineRoute({
  method: 'POST',
  url: '/api/v1/auth/logout',
  operationId: 'auth-session-logout',
  summary: 'Sign out',
  description:
    'Deletes the session the cookie names and clears the cookie. Signing out when signed out is not an error: 204 all the same.',
  tags: ['auth'],
  access: 'optional',
  // A personal access token is no session: it can neither change the password nor sign out.
  bearer: false,
  publishes: ['auth.logged_out'],
  schema: { response: { 204: NoContent } },
  async handler({ tx, request, reply, services }) {
    const rawId = request.cookies[sessionCookie(services.config).name];
    // Also removes a row the cookie names that no longer counts as a session (expired, or its user deactivated).
    if (rawId) await endSession(tx, rawId);
    if (tx.session) tx.publish('auth.logged_out', { userId: tx.session.userId });
    clearSessionCookie(reply, services.config);
    reply.code(204);
    return null;
  },
});

export const meRoute = defineRoute({
  method: 'GET',
  url: '/api/v1/auth/me',
  operationId: 'auth-identity-read',
  summary: 'The signed-in identity',
  description: "The caller's Identity, with permissions resolved from the stored roles in this very request.",
  tags: ['auth'],
  access: 'signedIn',
  schema: { response: { 200: IdentitySchema } },
  async handler({ tx }) {
    const identity = await loadIdentity(tx, tx.session!.userId);
    if (!identity) throw problem('AUTH_REQUIRED', 'Sign in to use this route');
    return identity;
  },
});
