import type { Static } from 'typebox';
import type { EntityTable } from '../../framework/db/entity-table.ts';
import type { UserFields } from './user.fields.ts';

export type UserStatus = Static<UserFields['status']>;

/**
 * The users table (migrations/user), for typed queries outside the generic operations: derived
 * from the fields, plus the password hash, a column (storage.columns) that is no field.
 */
export type UsersTable = EntityTable<UserFields> & { password_hash: string | null };

declare module '../../framework/contracts/database.ts' {
  interface Database {
    users: UsersTable;
  }
}
