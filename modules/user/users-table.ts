import type { Static } from 'typebox';
import type { EntityTable } from '../../framework/db/entity-table.ts';
import type { UserFields } from './user.fields.ts';
import { declareExportExclusions } from '../../framework/bulk/tenant-export/exclusions.ts';

export type UserStatus = Static<UserFields['status']>;

/**
 * The users table (migrations/user), for typed queries outside the generic operations: derived
 * from the fields, plus the password hash, a column (storage.columns) that is no field.
 */
export type UsersTable = EntityTable<UserFields> & { password_hash: string | null };

declare module '../../framework/db/types.ts' {
  interface Database {
    users: UsersTable;
  }
}

// The export leaves every password hash out (framework/bulk/tenant-export/).
declareExportExclusions({ users: { columns: ['password_hash'], reason: 'a password hash is a credential' } });
