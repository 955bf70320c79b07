import type { AnyRoute } from '../../framework/entity/define.ts';
import { loginRoute } from './login.ts';
import { logoutRoute, meRoute } from './session.routes.ts';
import { changePasswordRoute, forgotPasswordRoute, resetPasswordRoute } from './password.routes.ts';
import { deleteRoleRoute, listRolesRoute, putRoleRoute } from './roles.routes.ts';
import { resetPageRoute } from './reset-page.ts';

/** The password sign-in routes, the roles routes and the set-password page. */
export const authRoutes: readonly AnyRoute[] = [
  loginRoute,
  logoutRoute,
  meRoute,
  changePasswordRoute,
  forgotPasswordRoute,
  resetPasswordRoute,
  listRolesRoute,
  putRoleRoute,
  deleteRoleRoute,
  resetPageRoute,
];
