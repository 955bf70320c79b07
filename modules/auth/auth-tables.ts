import type { ColumnType, Generated } from 'kysely';
import { declareUniqueKeys } from '../../framework/db/unique-keys.ts';
import { declareExportExclusions } from '../../framework/bulk/tenant-export/exclusions.ts';

// The auth module's own tables (migrations/auth), column for column, for kysely's typed builder
// (roles, sessions and access_tokens are the framework's identity tables: framework/contracts/database.ts).
// A column with a database default is Generated (optional on insert); timestamps are Date.

/** What an auth_attempts row counts: a failed login, a forgot-password request, a reset. */
export type AttemptKind = 'login' | 'forgot' | 'reset';

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

declare module '../../framework/contracts/database.ts' {
  interface Database {
    set_password_tokens: SetPasswordTokensTable;
    auth_attempts: AuthAttemptsTable;
  }
}

// What each unique key of these tables protects, for the 409 a violation answers (never its name).
declareUniqueKeys({
  set_password_tokens_tenant_id_token_hash_key: { fields: [], detail: 'This set-password token exists already' },
  set_password_tokens_one_pending: { fields: [], detail: 'This person has a pending set-password link already' },
});

// A tenant's export never carries a credential: a set-password token is nothing but one
// (framework/bulk/tenant-export/; the framework's identity tables declare their own there). The
// sign-in counters are the throttle's working state, not the tenant's data.
declareExportExclusions({
  set_password_tokens: { reason: 'every row is a credential (a set-password link)' },
  auth_attempts: {
    reason: 'throttling counters of the sign-in area (client addresses, hashed accounts), swept within hours',
  },
});
