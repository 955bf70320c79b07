import type { EntityRow, TxContext } from '../../framework/entity/define.ts';
import { problem } from '../../framework/errors.ts';
import type { UserFields } from './user.fields.ts';
import { checkedRoles } from './roles.ts';
import { userByEmail, USER_ROW } from './users-query.ts';
import { admitLimit } from '../../framework/entitlements/limits.ts';

export interface Invitation {
  email: string;
  displayName?: string | undefined;
  roles?: readonly string[] | undefined;
}

export type UserRow = EntityRow<UserFields>;

export interface InviteOptions {
  /**
   * Extra payload of user.invited. `{ via: 'admin-invite' }` tells the invitation-mail
   * subscription that the link was already handed out, so it must not mint a second one.
   */
  payload?: { via: 'admin-invite' };
}

/** The user of this tenant at an address, compared case-insensitively, soft-deleted ones aside. */
export async function findUserByEmail(
  ctx: TxContext,
  email: string,
): Promise<(UserRow & { hasPassword: boolean }) | undefined> {
  return userByEmail(ctx, email)
    .select(USER_ROW)
    .select((eb) => eb('password_hash', 'is not', null).$castTo<boolean>().as('hasPassword'))
    .executeTakeFirst();
}

/**
 * Invites a person into the transaction's tenant: an invited user (no password, cannot sign in)
 * holding the given roles, granted in this same transaction, and user.invited. An address already
 * present, in any letter case, is 409 ALREADY_EXISTS; an unknown role is 422 ROLE_UNKNOWN.
 */
export async function inviteUser(
  ctx: TxContext,
  invitation: Invitation,
  options: InviteOptions = {},
): Promise<UserRow> {
  const email = invitation.email.trim();
  const roles = await checkedRoles(ctx, invitation.roles ?? []);
  if (await findUserByEmail(ctx, email)) throw alreadyPresent();
  // One more seat: within the plan's user.seats, under the limit's lock (10 racing for one seat: one passes).
  await admitLimit(ctx, 'user.seats', 1);
  let row: UserRow;
  try {
    row = await ctx.db
      .insertInto('users')
      .values({ email, display_name: invitation.displayName?.trim() ?? '', status: 'invited', roles })
      .returning(USER_ROW)
      .executeTakeFirstOrThrow();
  } catch (err) {
    // Two invitations racing for one address: the unique index decides, the loser gets the same 409.
    if ((err as { code?: string }).code === '23505') throw alreadyPresent();
    throw err;
  }
  ctx.publish('user.invited', { id: row.id, ...(options.payload ?? {}) });
  return row;
}

const alreadyPresent = () =>
  problem('ALREADY_EXISTS', 'a user with this address already exists in this tenant', {
    extensions: { field: 'email' },
  });
