import type { TxContext } from '../../framework/entity/define.ts';
import { problem } from '../../framework/errors.ts';
import { refuseTokenCaller } from '../../framework/access/credentials.ts';
import { findUserByEmail, inviteUser, type Invitation, type InviteOptions, type UserRow } from './invite.ts';
import { normaliseRoles, publishRolesSet, roleChange } from './roles.ts';
import { userByEmail, USER_ROW } from './users-query.ts';
import type { UserStatus } from './users-table.ts';
import { administrators } from './administrators.ts';

/** What sign-in needs of a person: never shown, never published. */
export interface UserCredentials {
  id: string;
  status: UserStatus;
  passwordHash: string | null;
}

/**
 * The one way other modules write users, and the reads they need for it. The user module owns
 * the users table: auth, tenant and any later module call this instead of writing SQL against it
 * (a test fails the build if one does). Every function runs in the caller's tenant transaction
 * and publishes the user events its change implies, so no caller can forget one.
 */
export const usersService = {
  /** The live user at an address, compared case-insensitively. */
  findByEmail: findUserByEmail,

  /** The live user at an address with the stored password hash, for sign-in only. */
  async findCredentials(ctx: TxContext, email: string): Promise<UserCredentials | undefined> {
    return userByEmail(ctx, email).select(['id', 'status', 'password_hash as passwordHash']).executeTakeFirst();
  },

  /** The live user with this id, as the API shows it (never the password hash), or undefined. */
  async findById(ctx: TxContext, userId: string): Promise<UserRow | undefined> {
    return ctx.db
      .selectFrom('users')
      .select(USER_ROW)
      .where('id', '=', userId)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
  },

  /**
   * Locks the live user's row for the rest of the transaction (a concurrent deactivation waits)
   * and answers its status, or undefined when there is no such user. `share` takes a shared lock
   * instead: enough to keep the status from changing, while other readers that only share it
   * (two sign-ins of one person) do not wait for each other.
   */
  async lock(
    ctx: TxContext,
    userId: string,
    options: { share?: boolean } = {},
  ): Promise<{ id: string; status: UserStatus } | undefined> {
    const query = ctx.db
      .selectFrom('users')
      .select(['id', 'status'])
      .where('id', '=', userId)
      .where('deleted_at', 'is', null);
    return (options.share ? query.forShare() : query.forUpdate()).executeTakeFirst();
  },

  /** Like lock, with the stored password hash, for checking the password in force before changing it. */
  async lockCredentials(ctx: TxContext, userId: string): Promise<UserCredentials | undefined> {
    return ctx.db
      .selectFrom('users')
      .select(['id', 'status', 'password_hash as passwordHash'])
      .where('id', '=', userId)
      .where('deleted_at', 'is', null)
      .forUpdate()
      .executeTakeFirst();
  },

  /**
   * Stores a new password hash and publishes user.password_set; with `activate`, an invited user
   * becomes active in the same statement. A deactivated (or deleted) user is refused with 409
   * INVALID_STATE and nothing is written: callers that want their own wording check first. Never
   * for a personal access token's caller (401 AUTH_REQUIRED, framework/access/credentials.ts).
   */
  async setPasswordHash(
    ctx: TxContext,
    userId: string,
    hash: string,
    options: { activate?: boolean } = {},
  ): Promise<void> {
    refuseTokenCaller(ctx, 'Setting a password');
    const updated = await ctx.db
      .updateTable('users')
      .set({ password_hash: hash, updated_at: ctx.now, ...(options.activate ? { status: 'active' as const } : {}) })
      .where('id', '=', userId)
      .where('deleted_at', 'is', null)
      .where('status', '<>', 'deactivated')
      .returning('id')
      .executeTakeFirst();
    if (!updated) throw problem('INVALID_STATE', 'only an invited or active user can be given a password');
    ctx.publish('user.password_set', { id: userId });
  },

  /**
   * Replaces the user's roles with the requested set (normalised; 422 ROLE_UNKNOWN for a role this
   * tenant lacks) and publishes user.roles_set. The same set changes nothing and publishes nothing.
   * A set that takes the tenant's last administrator away is 409 LAST_ADMINISTRATOR, nothing written.
   * Answers the roles now held.
   */
  async setRoles(
    ctx: TxContext,
    user: { id: string; roles: readonly string[] },
    roles: readonly string[],
  ): Promise<string[]> {
    const change = await roleChange(ctx, user.roles, roles);
    if (!change) return normaliseRoles(user.roles);
    if (change.before.some((role) => !change.after.includes(role))) {
      // A role taken away may be the tenant's last administrator's.
      const locked = await usersService.lock(ctx, user.id);
      if (locked)
        await administrators.assertOneRemains(ctx, {
          user: { id: user.id, status: locked.status, roles: change.before },
          roles: change.after,
        });
    }
    await ctx.db
      .updateTable('users')
      .set({ roles: change.after, updated_at: ctx.now })
      .where('id', '=', user.id)
      .execute();
    publishRolesSet(ctx, user.id, change);
    return change.after;
  },

  /** The ids of the live, active users holding any of these roles (e.g. the tenant's admins, to notify them). */
  async activeHolding(ctx: TxContext, roles: readonly string[]): Promise<string[]> {
    if (roles.length === 0) return [];
    const rows = await ctx.db
      .selectFrom('users')
      .select('id')
      .where('status', '=', 'active')
      .where('deleted_at', 'is', null)
      .where((eb) => eb('roles', '&&', eb.val([...roles])))
      .execute();
    return rows.map((r) => r.id);
  },

  /**
   * Takes a role from every live user holding it (the role is being deleted) and publishes
   * user.roles_set for each. Answers whether an active user held it. The caller checks the
   * last-administrator rule: this does not.
   */
  async removeRole(ctx: TxContext, role: string): Promise<{ heldByActive: boolean }> {
    const changed = await ctx.db
      .updateTable('users')
      .set((eb) => ({ roles: eb.fn<string[]>('array_remove', ['roles', eb.val(role)]), updated_at: ctx.now }))
      .where((eb) => eb('roles', '@>', eb.val([role])))
      .where('deleted_at', 'is', null)
      .returning(['id', 'roles', 'status'])
      .execute();
    for (const user of changed)
      publishRolesSet(ctx, user.id, { before: [...user.roles, role].sort(), after: user.roles });
    return { heldByActive: changed.some((user) => user.status === 'active') };
  },

  /** Invites a person (see inviteUser): an invited user holding the roles, and user.invited. */
  invite: (ctx: TxContext, invitation: Invitation, options?: InviteOptions): Promise<UserRow> =>
    inviteUser(ctx, invitation, options),
} as const;
