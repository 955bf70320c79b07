import type { Access } from '../entity/define.ts';
import type { TenantRef } from '../context/tenant.ts';
import type { SessionInfo } from '../context/tx.ts';
import type { ModuleRegistry as Registry } from '../contracts/services.ts';
import { allowsAccess } from '../access/guard.ts';

/**
 * Would a route guarded by `access` let this caller in? The route wrapper's own guard
 * (access/guard.ts, RouteGuard), so a link, a button or a sidebar entry is shown exactly where
 * following it is allowed.
 */
export function allows(access: Access, session: SessionInfo | null, tenant: TenantRef, registry: Registry): boolean {
  return allowsAccess(access, session, tenant, registry);
}
