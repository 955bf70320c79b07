import type { TxContext } from '../../framework/context/tx.ts';
import { problem } from '../../framework/errors.ts';
import { usersService } from '../user/users-service.ts';
import './auth-tables.ts';

/** The permission that grants every other: an administrator is an active user holding a role with it. */
export const WILDCARD = '*';

/**
 * A change that may leave the tenant without an administrator:
 * - `user`: that user stops being active (deactivated, deleted), or, with `roles`, holds these instead;
 * - `role`: that role stops granting `*` (its list loses it, or the role is deleted); `heldByActive`
 *   says whether an active user held it, for a caller that already took it from its holders.
 */
export type AdministratorChange =
  | { user: { id: string; status: string; roles: readonly string[] }; roles?: readonly string[] }
  | { role: string; heldByActive?: boolean };

const lastAdministrator = (detail: string) => problem('LAST_ADMINISTRATOR', detail);

/** The tenant's roles that grant `*`, leaving out `except`. */
async function wildcardRoles(ctx: TxContext, except?: string): Promise<string[]> {
  let query = ctx.db.selectFrom('roles').select('name').where((eb) => eb('permissions', '@>', eb.val([WILDCARD])));
  if (except !== undefined) query = query.where('name', '<>', except);
  return (await query.execute()).map((r) => r.name);
}

/**
 * Serialises the tenant's administrator changes: a transaction-scoped advisory lock keyed by the
 * tenant, held until commit. Whoever takes it next counts the administrators only after the
 * previous change committed, so two administrators removing each other at once leave one.
 * It is taken after the change's own row locks and nothing but reads follow it, so it cannot
 * close a cycle of waits with them.
 */
async function lockAdministrators(ctx: TxContext): Promise<void> {
  await ctx.db
    .selectNoFrom((eb) => eb.fn('pg_advisory_xact_lock', [eb.fn('hashtextextended', [eb.val(`administrators:${ctx.tenant.id}`), eb.lit(0)])]).as('locked'))
    .execute();
}

/**
 * The sign-in area's rule over users and roles: a tenant (the operator tenant too) never loses its
 * last active user holding every permission. The user module (deactivate, delete, the roles
 * command, usersService.setRoles) and the roles routes and page call it before they write; it
 * refuses with 409 LAST_ADMINISTRATOR, and the caller's transaction rolls back with nothing
 * written. Users are read through usersService: auth owns roles, the user module owns users.
 */
export const administrators = {
  /** Whether holding these roles grants every permission in this tenant. */
  async granted(ctx: TxContext, roles: readonly string[]): Promise<boolean> {
    if (roles.length === 0) return false;
    const row = await ctx.db.selectFrom('roles').select('name').where('name', 'in', [...roles]).where((eb) => eb('permissions', '@>', eb.val([WILDCARD]))).limit(1).executeTakeFirst();
    return row !== undefined;
  },

  /**
   * Refuses (409 LAST_ADMINISTRATOR) a change after which no active user would hold every
   * permission. A change that takes nobody's administration away passes without a lock; one
   * that does waits for the tenant's other administrator changes, then looks for another
   * active administrator. A tenant that has none already (before its first administrator signs
   * up) is not refused the changes that cannot make it worse.
   */
  async assertOneRemains(ctx: TxContext, change: AdministratorChange): Promise<void> {
    if ('user' in change) {
      const { user, roles } = change;
      if (user.status !== 'active' || !(await administrators.granted(ctx, user.roles))) return;
      if (roles !== undefined && (await administrators.granted(ctx, roles))) return;
    }
    await lockAdministrators(ctx);
    const roles = await wildcardRoles(ctx, 'role' in change ? change.role : undefined);
    const except = 'user' in change ? { except: change.user.id } : {};
    if (await usersService.anyActiveHolding(ctx, roles, except)) return;
    // A role nobody active holds made nobody an administrator: the tenant had none before either.
    if ('role' in change && !(change.heldByActive ?? (await usersService.anyActiveHolding(ctx, [change.role])))) return;
    throw lastAdministrator(
      'user' in change
        ? 'This is the last administrator of the tenant (an active user whose role grants every permission, *). Make another active user an administrator first.'
        : `Role ${change.role} is what makes the last administrator of the tenant: without * in it, no active user would hold every permission. Make another active user an administrator first.`,
    );
  },
} as const;
