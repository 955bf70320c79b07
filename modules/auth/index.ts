import { defineModule } from '../../framework/entity/define.ts';
import { authRoutes } from './routes.ts';
import { oidcRoutes } from './oidc/routes.ts';
import { resetLinkMail } from './reset-mail.ts';
import { invitationMail } from './invitation-mail.ts';
import { endSessionsOnDeactivation } from './deactivation.ts';
import { authSweep } from './sweep.ts';
import { registerRolePages } from './roles.admin.ts';
import { createTokenRoute, listTokensRoute, revokeTokenRoute } from './tokens.routes.ts';
import { bearerAttempts, revokeTokensOnDeactivation } from './tokens-lifecycle.ts';
import { registerTokenPages } from './tokens.admin.ts';
import { TOKEN_MANAGE } from './tokens.ts';
import { authProblems } from './problems.ts';
import { CORS_MANAGE, listCorsOriginsRoute, putCorsOriginsRoute } from './cors-origins.routes.ts';
import { CORS_ORIGINS_PAGE, registerCorsOriginPages } from './cors-origins.admin.ts';

export const authModule = defineModule({
  name: 'auth',
  description: 'Sessions, passwords, single sign-on and roles',
  problems: authProblems,
  permissions: [
    { name: 'role:manage', description: 'Read and set roles; the Roles navigation entry' },
    { name: TOKEN_MANAGE, description: 'List and revoke any personal access token of the tenant, not only your own' },
    {
      name: CORS_MANAGE,
      description: "Read and set the web origins whose pages may call the tenant's API with a personal access token",
    },
  ],
  limits: [
    {
      name: 'token.active',
      unit: 'tokens',
      description: 'Personal access tokens not yet expired.',
      use: async (ctx) => {
        const row = await ctx.db
          .selectFrom('access_tokens')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('expires_at', '>', ctx.now)
          .executeTakeFirstOrThrow();
        return Number(row.n);
      },
    },
  ],
  events: [
    'auth.logged_in',
    'auth.logged_out',
    'auth.login_failed',
    'auth.reset_requested',
    'auth.password_reset',
    'auth.role_set',
    'auth.token_created',
    'auth.token_revoked',
  ],
  // Password sign-in, roles and the reset page always; single sign-on only when an issuer is configured.
  routes: (config) => [
    ...authRoutes,
    createTokenRoute,
    listTokensRoute,
    revokeTokenRoute,
    listCorsOriginsRoute,
    putCorsOriginsRoute,
    ...oidcRoutes(config),
  ],
  // Set-password links are auth's (set_password_tokens): it mails the reset and the invitation link.
  subscriptions: [resetLinkMail, invitationMail, endSessionsOnDeactivation, revokeTokensOnDeactivation],
  jobs: [authSweep],
  // Roles have hand-written pages (roles.admin.ts) in place of generated ones.
  admin: {
    label: 'Sign-in and access',
    pages: [registerRolePages, registerTokenPages, registerCorsOriginPages],
    sidebar: [
      { label: 'Roles', path: '/admin/auth/roles', order: 20 },
      // The origins whose pages may call the API with a token: beside the tokens such pages use.
      { label: 'Web origins', path: CORS_ORIGINS_PAGE, order: 85 },
      // Every signed-in person's own tokens: a personal page, after the tenant's screens.
      { label: 'Access tokens', path: '/admin/auth/tokens', order: 90 },
    ],
    resourcePages: false,
  },
  // Failed personal access token attempts (bearer requests) count with failed sign-ins.
  bearerAttempts,
});
