import { defineModule } from '../../framework/entity/define.ts';
import { oidcRoutes } from './oidc/routes.ts';

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
  routes: oidcRoutes,
});
