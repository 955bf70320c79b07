import { apiRoute, runApiRoute } from './api-route.ts';
import { registerAdminPage, type AdminSite } from './page.ts';
import { LOGIN_PATH, SIGN_OUT_PATH } from './shell.ts';

const LOGOUT_OPERATION = 'auth-session-logout';

/**
 * POST /admin/logout, the header's sign-out form: runs the logout route's own handler (ends the
 * session, clears the cookie, publishes its event) in a form post with the CSRF token, then sends
 * the browser to the login page. Not served when no module provides the logout route.
 */
export function registerSignOut(site: AdminSite): void {
  const logout = apiRoute(site.services, LOGOUT_OPERATION);
  if (!logout || logout.transaction === 'none') return;
  registerAdminPage(site, {
    method: 'POST',
    path: SIGN_OUT_PATH,
    summary: 'Sign out (admin form)',
    access: logout.access,
    ...(logout.publishes ? { publishes: logout.publishes } : {}),
    handler: async (ctx) => {
      await runApiRoute(logout, ctx);
      return ctx.redirect(LOGIN_PATH);
    },
  });
}
