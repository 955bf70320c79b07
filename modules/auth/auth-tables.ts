import type { ColumnType, Generated } from 'kysely';
import type { AttemptKind } from './throttle.ts';
import { declareUniqueKeys } from '../../framework/db/unique-keys.ts';
import { declareExportExclusions } from '../../framework/bulk/tenant-export/exclusions.ts';

// The auth module's tables (migrations/auth), column for column, for kysely's typed builder.
// A column with a database default is Generated (optional on insert); timestamps are Date.

/** roles (0001_sessions_roles.sql); the framework reads it too (framework/access/identity-tables.ts). */
export interface RolesTable {
  tenant_id: Generated<string>;
  name: string;
  permissions: Generated<string[]>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

/** sessions (0001_sessions_roles.sql); the framework opens, touches and ends them too. */
export interface SessionsTable {
  id: Generated<string>;
  tenant_id: Generated<string>;
  id_hash: Buffer;
  user_id: string;
  created_at: Generated<Date>;
  last_seen_at: Generated<Date>;
  expires_at: Date;
  user_agent: Generated<string>;
  ip: Generated<string>;
}

/** set_password_tokens (0002_set_password_tokens.sql). */
export interface SetPasswordTokensTable {
  id: Generated<string>;
  tenant_id: Generated<string>;
  user_id: string;
  token_hash: Buffer;
  created_at: Generated<Date>;
  sent_at: Generated<Date>;
  expires_at: Date;
  used_at: Date | null;
}

/** auth_attempts (0003_auth_attempts.sql). The id is a bigint identity, which pg hands back as a string. */
export interface AuthAttemptsTable {
  id: ColumnType<string, never, never>;
  tenant_id: Generated<string>;
  kind: AttemptKind;
  source: string;
  account: Buffer | null;
  at: Generated<Date>;
}

declare module '../../framework/db/types.ts' {
  interface Database {
    roles: RolesTable;
    sessions: SessionsTable;
    set_password_tokens: SetPasswordTokensTable;
    auth_attempts: AuthAttemptsTable;
  }
}

// What each unique key of these tables protects, for the 409 a violation answers (never its name).
declareUniqueKeys({
  roles_pkey: { fields: ['name'], detail: 'A role of this name already exists' },
  sessions_tenant_id_id_hash_key: { fields: [], detail: 'This session exists already' },
  set_password_tokens_tenant_id_token_hash_key: { fields: [], detail: 'This set-password token exists already' },
  set_password_tokens_one_pending: { fields: [], detail: 'This person has a pending set-password link already' },
});

// A tenant's export never carries a credential: sessions and set-password tokens are nothing but
// one, and an access token's hash is left out of its row (framework/bulk/tenant-export/).
declareExportExclusions({
  sessions: { reason: 'every row is a credential (a signed-in session)' },
  set_password_tokens: { reason: 'every row is a credential (a set-password link)' },
  access_tokens: { columns: ['token_hash'], reason: 'the hash of a personal access token is a credential' },
});
