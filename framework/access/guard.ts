import type { Access } from '../entity/define.ts';
import type { TenantRef } from '../context/tenant.ts';
import type { SessionInfo } from '../context/tx.ts';
import { hasPermission } from '../context/tx.ts';
import { problem } from '../errors.ts';

/**
 * Refuses an operator permission outside the operator tenant before any transaction opens and
 * before any role is read.
 */
export function refuseOperatorOutsideOperatorTenant(
  access: Access,
  tenant: TenantRef,
  isOperatorPermission: (p: string) => boolean,
): void {
  if (typeof access === 'object' && isOperatorPermission(access.permission) && !tenant.isOperator) {
    throw problem(
      'AUTH_NOT_OPERATOR',
      `${access.permission} is an operator permission and is refused outside the operator tenant`,
    );
  }
}

/** Not signed in: 401 AUTH_REQUIRED. Signed in without the permission: 403 AUTH_FORBIDDEN. */
export function authorize(access: Access, session: SessionInfo | null): void {
  if (access === 'public' || access === 'optional') return;
  if (!session) throw problem('AUTH_REQUIRED', 'Sign in to use this route');
  if (access === 'signedIn') return;
  if (!hasPermission(session, access.permission)) {
    throw problem('AUTH_FORBIDDEN', `Requires permission ${access.permission}`);
  }
}

export const needsSession = (access: Access): boolean => access !== 'public';
