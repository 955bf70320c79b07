import { sql } from 'kysely';
import type { TxContext } from '../../framework/context/tx.ts';
import type { EntityRow } from '../../framework/entity/define.ts';
import { problem } from '../../framework/errors.ts';
import type { UserFields } from './user.fields.ts';
import { checkedRoles } from './roles.ts';

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

const RETURNING = sql`id, email, display_name as "displayName", status, roles, created_at as "createdAt", updated_at as "updatedAt"`;

/** The user of this tenant at an address, compared case-insensitively, soft-deleted ones aside. */
export async function findUserByEmail(ctx: TxContext, email: string): Promise<(UserRow & { hasPassword: boolean }) | undefined> {
  const { rows } = await sql<UserRow & { hasPassword: boolean }>`
    select ${RETURNING}, password_hash is not null as "hasPassword"
      from users where lower(email) = lower(${email.trim()}) and deleted_at is null`.execute(ctx.db);
  return rows[0];
}

/**
 * Invites a person into the transaction's tenant: an invited user (no password, cannot sign in)
 * holding the given roles, granted in this same transaction, and user.invited. An address already
 * present, in any letter case, is 409 ALREADY_EXISTS; an unknown role is 422 ROLE_UNKNOWN.
 */
export async function inviteUser(ctx: TxContext, invitation: Invitation, options: InviteOptions = {}): Promise<UserRow> {
  const email = invitation.email.trim();
  const roles = await checkedRoles(ctx, invitation.roles ?? []);
  if (await findUserByEmail(ctx, email)) throw alreadyPresent();
  let rows: UserRow[];
  try {
    ({ rows } = await sql<UserRow>`
      insert into users (email, display_name, status, roles)
      values (${email}, ${invitation.displayName?.trim() ?? ''}, 'invited', ${roles}::text[])
      returning ${RETURNING}`.execute(ctx.db));
  } catch (err) {
    // Two invitations racing for one address: the unique index decides, the loser gets the same 409.
    if ((err as { code?: string }).code === '23505') throw alreadyPresent();
    throw err;
  }
  const row = rows[0]!;
  ctx.publish('user.invited', { id: row.id, ...(options.payload ?? {}) });
  return row;
}

const alreadyPresent = () => problem('ALREADY_EXISTS', 'a user with this address already exists in this tenant', { extensions: { field: 'email' } });
