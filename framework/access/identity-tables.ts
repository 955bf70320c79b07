/**
 * The framework's identity schema (migrations/framework/0013_identity.sql): the tables the request
 * path reads and writes, and the columns it uses of each. The SQL in context/opening.ts (the
 * opening statement of every transaction), access/sessions.ts, access/roles.ts and
 * tenancy/create-tenant.ts uses exactly these columns. Modules add columns and tables of their own
 * (the user module's address and name, auth's token names), never change these: the boot check
 * (entity/table-check.ts) refuses to start when a migration left one out, gave it another type, or
 * stopped isolating the table by tenant.
 */
export type IdentityTableName = 'users' | 'roles' | 'sessions' | 'access_tokens';

export interface IdentityTable {
  table: IdentityTableName;
  /** What the framework does with it, and where. */
  usedFor: string;
  /** column → type, as PostgreSQL names it (text[] for arrays). */
  columns: Readonly<Record<string, string>>;
}

export const IDENTITY_TABLES: readonly IdentityTable[] = [
  {
    table: 'users',
    usedFor:
      "context/opening.ts resolves a session only for a live user whose status is 'active', and reads the roles they hold; access/actors.ts reads the same of the person a command's actor field names, and narrows a picker to the active users holding a permission",
    columns: { id: 'uuid', tenant_id: 'uuid', status: 'text', roles: 'text[]', deleted_at: 'timestamptz' },
  },
  {
    table: 'roles',
    usedFor:
      'context/opening.ts turns the roles a user holds into permissions; tenancy/create-tenant.ts seeds admin and member; access/roles.ts answers which roles exist, which grant * and which grant a permission',
    columns: { tenant_id: 'uuid', name: 'text', permissions: 'text[]' },
  },
  {
    table: 'sessions',
    usedFor:
      'context/opening.ts resolves the session cookie and touches the session; access/sessions.ts opens, ends and sweeps sessions',
    columns: {
      id: 'uuid',
      tenant_id: 'uuid',
      id_hash: 'bytea',
      user_id: 'uuid',
      created_at: 'timestamptz',
      last_seen_at: 'timestamptz',
      expires_at: 'timestamptz',
      user_agent: 'text',
      ip: 'text',
    },
  },
  {
    table: 'access_tokens',
    usedFor:
      "context/opening.ts resolves an Authorization: Bearer token (personal access token) and records when it was last used; access/credentials.ts ends a person's tokens when a password is set without the one in force",
    columns: {
      id: 'uuid',
      tenant_id: 'uuid',
      token_hash: 'bytea',
      name: 'text',
      user_id: 'uuid',
      permissions: 'text[]',
      created_at: 'timestamptz',
      expires_at: 'timestamptz',
      last_used_at: 'timestamptz',
    },
  },
];
