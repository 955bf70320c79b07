import { defineModule } from '../../framework/entity/define.ts';
import { authRoutes } from './routes.ts';
import { oidcRoutes } from './oidc/routes.ts';
import { resetLinkMail } from './reset-mail.ts';
import { invitationMail } from './invitation-mail.ts';
import { endSessionsOnDeactivation } from './deactivation.ts';
import { authSweep } from './sweep.ts';
import { registerRolePages } from './roles.admin.ts';

export const authModule = defineModule({
  name: 'auth',
  description: 'Sessions, passwords, single sign-on and roles',
  permissions: [{ name: 'role:manage', description: 'Read and set roles; the Roles navigation entry' }],
  events: [
    'auth.logged_in',
    'auth.logged_out',
    'auth.login_failed',
    'auth.reset_requested',
    'auth.password_reset',
    'auth.role_set',
  ],
  // Password sign-in, roles and the reset page always; single sign-on only when an issuer is configured.
  routes: (config) => [...authRoutes, ...oidcRoutes(config)],
  // Set-password links are auth's (set_password_tokens): it mails the reset and the invitation link.
  subscriptions: [resetLinkMail, invitationMail, endSessionsOnDeactivation],
  jobs: [authSweep],
  // Roles have hand-written pages (roles.admin.ts) in place of generated ones.
  admin: {
    pages: [registerRolePages],
    sidebar: [{ label: 'Roles', path: '/admin/auth/roles', order: 20 }],
    resourcePages: false,
  },
  // The framework's opening statement reads sessions and roles (framework/access/identity-tables.ts).
  identityTables: ['roles', 'sessions'],
});
