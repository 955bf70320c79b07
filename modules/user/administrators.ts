import type { TxContext } from '../../framework/entity/define.ts';
import { problem } from '../../framework/errors.ts';
import { roleDirectory } from '../../framework/access/roles.ts';
import { anyActiveHolding } from './users-query.ts';

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

/**
 * Serialises the tenant's administrator changes: a transaction-scoped advisory lock keyed by the
 * tenant, held until commit. Whoever takes it next counts the administrators only after the
 * previous change committed, so two administrators removing each other at once leave one.
 * It is taken after the change's own row locks and nothing but reads follow it, so it cannot
 * close a cycle of waits with them.
 */
async function lockAdministrators(ctx: TxContext): Promise<void> {
  await ctx.db
    .selectNoFrom((eb) =>
      eb
        .fn('pg_advisory_xact_lock', [
          eb.fn('hashtextextended', [eb.val(`administrators:${ctx.tenant.id}`), eb.lit(0)]),
        ])
        .as('locked'),
    )
    .execute();
}

/**
 * The last-administrator rule: a tenant (the operator tenant too) never loses its last active user
 * holding every permission (a role with `*`). It is a rule over users, so the user module owns it:
 * its deactivate, delete and roles command and usersService.setRoles call it before they write,
 * and so do the sign-in area's roles routes and page (modules/auth, which owns the roles table)
 * before a role stops granting `*`. It refuses with 409 LAST_ADMINISTRATOR, and the caller's
 * transaction rolls back with nothing written. Roles are read through the framework's role
 * reads (framework/access/roles.ts), so this module imports nothing of auth.
 */
export const administrators = {
  /** Whether holding these roles grants every permission in this tenant. */
  async granted(ctx: TxContext, roles: readonly string[]): Promise<boolean> {
    return roleDirectory.grantEverything(ctx, roles);
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
    const roles = await roleDirectory.grantingEverything(ctx, 'role' in change ? { except: change.role } : {});
    const except = 'user' in change ? { except: change.user.id } : {};
    if (await anyActiveHolding(ctx, roles, except)) return;
    // A role nobody active holds made nobody an administrator: the tenant had none before either.
    if ('role' in change && !(change.heldByActive ?? (await anyActiveHolding(ctx, [change.role])))) return;
    throw lastAdministrator(
      'user' in change
        ? 'This is the last administrator of the tenant (an active user whose role grants every permission, *). Make another active user an administrator first.'
        : `Role ${change.role} is what makes the last administrator of the tenant: without * in it, no active user would hold every permission. Make another active user an administrator first.`,
    );
  },
} as const;
