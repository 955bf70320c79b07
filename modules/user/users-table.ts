import type { Generated } from 'kysely';

export type UserStatus = 'invited' | 'active' | 'deactivated';

/** The users table (migrations/user), for typed queries outside the generic operations. */
export interface UsersTable {
  id: Generated<string>;
  tenant_id: Generated<string>;
  email: string;
  display_name: Generated<string>;
  status: Generated<UserStatus>;
  roles: Generated<string[]>;
  password_hash: string | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  deleted_at: Date | null;
}

declare module '../../framework/db/types.ts' {
  interface Database {
    users: UsersTable;
  }
}
