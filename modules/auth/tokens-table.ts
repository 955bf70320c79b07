import type { Generated } from 'kysely';
import { declareUniqueKeys } from '../../framework/db/unique-keys.ts';

/**
 * access_tokens (migrations/auth/0005_access_tokens.sql), column for column, for kysely's typed
 * builder: the personal access tokens. The framework reads it too, in a bearer request's opening
 * statement (framework/access/identity-tables.ts).
 */
export interface AccessTokensTable {
  id: Generated<string>;
  tenant_id: Generated<string>;
  user_id: string;
  name: string;
  token_hash: Buffer;
  permissions: Generated<string[]>;
  created_at: Generated<Date>;
  expires_at: Date;
  last_used_at: Date | null;
}

declare module '../../framework/contracts/database.ts' {
  interface Database {
    access_tokens: AccessTokensTable;
  }
}

declareUniqueKeys({
  access_tokens_tenant_id_token_hash_key: { fields: [], detail: 'This access token exists already' },
});
