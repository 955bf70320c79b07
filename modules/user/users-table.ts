import type { Static } from 'typebox';
import type { EntityTable } from '../../framework/db/entity-table.ts';
import type { UserFields } from './user.fields.ts';
import { declareExportExclusions } from '../../framework/bulk/tenant-export/exclusions.ts';

export type UserStatus = Static<UserFields['status']>;

/**
 * What the user module adds to the framework's users table (its core: id, tenant_id, roles and the
 * timestamps; migrations/framework/0013_identity.sql), for typed queries outside the generic
 * operations: the entity's own columns, derived from its fields, the statuses it defines, and the
 * password hash, a column (storage.columns) that is no field (migrations/user/0004_people_columns.sql).
 */
export type UserColumns = Pick<EntityTable<UserFields>, 'email' | 'display_name' | 'status'> & {
  password_hash: string | null;
};

declare module '../../framework/contracts/database.ts' {
  interface UsersTable extends UserColumns {}
}

// The export leaves every password hash out (framework/bulk/tenant-export/).
declareExportExclusions({ users: { columns: ['password_hash'], reason: 'a password hash is a credential' } });
