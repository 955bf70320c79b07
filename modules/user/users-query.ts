import type { TxContext } from '../../framework/context/tx.ts';
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
