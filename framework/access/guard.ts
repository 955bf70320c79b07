import type { Access } from '../entity/define.ts';
import type { TenantRef } from '../context/tenant.ts';
import type { SessionInfo } from '../context/tx.ts';
import { hasPermission } from '../context/tx.ts';
import { problem, type ProblemError } from '../errors.ts';
import { grants } from '../contracts/entitlements.ts';

/** Which permissions only the operator tenant may use (the registry answers it from the declarations). */
export interface OperatorPermissions {
  isOperatorPermission(permission: string): boolean;
}

/**
 * Who may call a route, made once from its `access` when the route is registered: the one place
 * authorization is decided. The route wrapper asks it before the body is read (the tenant, and a
 * caller with no credential at all), each request strategy asks it once the opening statement has
 * resolved the caller, the one-exchange strategy hands its permission to the opening statement's
 * SQL guard (context/opening.ts), and the admin shell and the catalog ask it, as a yes or no,
 * whether to offer a link.
 *
 * The decision is in two steps, in this order: the tenant (an operator permission outside the
 * operator tenant, 403 AUTH_NOT_OPERATOR, before any role is read), then the caller (not signed
 * in, 401 AUTH_REQUIRED; signed in without the permission, 403 AUTH_FORBIDDEN; with it, at a
 * tenant whose plan lacks the route's feature, 403 FEATURE_NOT_IN_PLAN), before anything is written.
 */
export class RouteGuard {
  /** The permission a caller must hold, when access is one: what the one-exchange SQL guard checks. */
  readonly permission: string | undefined;
  /** The route has a caller: its session or bearer token is resolved (every access but 'public'). */
  readonly resolvesCaller: boolean;
  /** The route refuses a request without a caller ('signedIn' and a permission). */
  readonly requiresCaller: boolean;
  /** An operator permission: refused outside the operator tenant, whoever asks. */
  private readonly operatorOnly: boolean;
  /**
   * The feature the tenant's plan must grant (a route's, command's or entity's `feature`): checked
   * after the caller, against the entitlements the opening statement resolved with the permissions.
   */
  readonly feature: string | undefined;

  constructor(access: Access, operator: OperatorPermissions, feature?: string) {
    this.feature = access === 'public' ? undefined : feature;
    this.permission = typeof access === 'object' ? access.permission : undefined;
    this.resolvesCaller = access !== 'public';
    this.requiresCaller = access !== 'public' && access !== 'optional';
    this.operatorOnly = this.permission !== undefined && operator.isOperatorPermission(this.permission);
  }

  /** Refuses an operator permission outside the operator tenant (step one). */
  admitTenant(tenant: TenantRef): void {
    if (this.outside(tenant)) throw this.notOperator();
  }

  /** Refuses a caller without the route's access (step two); null: nobody signed in. */
  admitCaller(session: SessionInfo | null): void {
    const refusal = this.refusal(session);
    if (refusal === 'AUTH_REQUIRED') throw problem('AUTH_REQUIRED', 'Sign in to use this route');
    if (refusal === 'AUTH_FORBIDDEN') throw problem('AUTH_FORBIDDEN', `Requires permission ${this.permission}`);
    if (refusal === 'FEATURE_NOT_IN_PLAN')
      throw problem('FEATURE_NOT_IN_PLAN', `The tenant's plan does not include the feature ${this.feature}`, {
        extensions: { feature: this.feature },
      });
  }

  /**
   * Would the caller pass but for the plan? The admin shell shows such an entry locked, with the
   * way to a plan that includes it, rather than hiding it.
   */
  lockedByPlan(session: SessionInfo | null, tenant: TenantRef): boolean {
    return !this.outside(tenant) && this.refusal(session) === 'FEATURE_NOT_IN_PLAN';
  }

  /** Both steps as a yes or no: would the route let this caller in at this tenant? */
  allows(session: SessionInfo | null, tenant: TenantRef): boolean {
    return !this.outside(tenant) && this.refusal(session) === undefined;
  }

  /** Step one's decision: the route's permission is the operator's and this is not the operator tenant. */
  private outside(tenant: TenantRef): boolean {
    return this.operatorOnly && !tenant.isOperator;
  }

  /** Step two's decision, which admitCaller throws and allows reads: why the caller may not pass, if it may not. */
  private refusal(session: SessionInfo | null): 'AUTH_REQUIRED' | 'AUTH_FORBIDDEN' | 'FEATURE_NOT_IN_PLAN' | undefined {
    if (!this.requiresCaller) return undefined;
    if (!session) return 'AUTH_REQUIRED';
    if (this.permission !== undefined && !hasPermission(session, this.permission)) return 'AUTH_FORBIDDEN';
    if (this.feature !== undefined && session.entitlements && !grants(session.entitlements, this.feature))
      return 'FEATURE_NOT_IN_PLAN';
    return undefined;
  }

  private notOperator(): ProblemError {
    return problem(
      'AUTH_NOT_OPERATOR',
      `${this.permission} is an operator permission and is refused outside the operator tenant`,
    );
  }
}

/**
 * Would a route guarded by `access` let this caller in? The route's own guard, for a link, a button
 * or a sidebar entry shown exactly where following it is allowed.
 */
export function allowsAccess(
  access: Access,
  session: SessionInfo | null,
  tenant: TenantRef,
  operator: OperatorPermissions,
  feature?: string,
): boolean {
  return new RouteGuard(access, operator, feature).allows(session, tenant);
}

/**
 * Does this caller hold a permission? The guard's own question, for what a route admits beyond its
 * access once the opening statement resolved the caller: a reference a list expands (its target's
 * read permission), or whether a replica's answer may stand for the caller.
 */
export function holdsPermission(session: SessionInfo | null, permission: string): boolean {
  return session !== null && hasPermission(session, permission);
}
