import type { TxContext } from '../../framework/entity/define.ts';
import './users-table.ts';

/** A user row as the API shows it: the entity's fields and system columns, never the hash. */
export const USER_ROW = [
  'id',
  'email',
  'display_name as displayName',
  'status',
  'roles',
  'created_at as createdAt',
  'updated_at as updatedAt',
] as const;

/**
 * The live user of the transaction's tenant at an address. Addresses compare case-insensitively,
 * as the unique index on lower(email) does, so the lookup uses that index.
 */
export function userByEmail(ctx: TxContext, email: string) {
  return ctx.db
    .selectFrom('users')
    .where((eb) => eb(eb.fn('lower', ['email']), '=', eb.fn('lower', [eb.val(email.trim())])))
    .where('deleted_at', 'is', null);
}

/**
 * Whether a live, active user holds any of these roles, leaving out the user `except` names (the
 * one a change is about to take out): the last-administrator rule (administrators.ts) asks this.
 */
export async function anyActiveHolding(
  ctx: TxContext,
  roles: readonly string[],
  options: { except?: string } = {},
): Promise<boolean> {
  if (roles.length === 0) return false;
  let query = ctx.db
    .selectFrom('users')
    .select('id')
    .where('status', '=', 'active')
    .where('deleted_at', 'is', null)
    .where((eb) => eb('roles', '&&', eb.val([...roles])));
  if (options.except !== undefined) query = query.where('id', '<>', options.except);
  return (await query.limit(1).executeTakeFirst()) !== undefined;
}
