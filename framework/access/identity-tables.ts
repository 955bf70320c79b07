/**
 * The tables the framework itself reads and writes although a module's migration creates them:
 * its identity reads. This is the one place that dependency is written down: the SQL in
 * context/tx.ts (the opening statement of every transaction), access/sessions.ts and
 * tenancy/create-tenant.ts uses exactly these columns, and the boot check (entity/table-check.ts)
 * refuses to start when a migration leaves one out, gives it another type, or stops isolating the
 * table by tenant. The framework names no module: a module declares the tables it provides with
 * `identityTables` in its definition (modules/user and modules/auth today). A module that replaces
 * users, roles or sessions must keep this shape.
 */
export type IdentityTableName = 'users' | 'roles' | 'sessions' | 'access_tokens';

export interface FrameworkTableUse {
  table: IdentityTableName;
  /** What the framework does with it, and where. */
  usedFor: string;
  /** column → type, as PostgreSQL names it (text[] for arrays). */
  columns: Readonly<Record<string, string>>;
}

export const FRAMEWORK_TABLE_USES: readonly FrameworkTableUse[] = [
  {
    table: 'users',
    usedFor:
      "context/tx.ts resolves a session only for a live user whose status is 'active', and reads the roles they hold; access/actors.ts reads the same of the person a command's actor field names, and narrows a picker to the active users holding a permission; admin/who-and-where.ts names the signed-in person in the admin shell's header",
    columns: {
      id: 'uuid',
      tenant_id: 'uuid',
      status: 'text',
      roles: 'text[]',
      deleted_at: 'timestamptz',
      display_name: 'text',
      email: 'text',
    },
  },
  {
    table: 'roles',
    usedFor:
      'context/tx.ts turns the roles a user holds into permissions; tenancy/create-tenant.ts seeds admin and member; access/roles.ts answers other modules which roles exist, which grant * and which grant a permission',
    columns: { tenant_id: 'uuid', name: 'text', permissions: 'text[]' },
  },
  {
    table: 'sessions',
    usedFor:
      'context/tx.ts resolves the session cookie and touches the session; access/sessions.ts opens and ends sessions',
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
      "context/tx.ts resolves an Authorization: Bearer token (personal access token) and records when it was last used; access/credentials.ts ends a person's tokens when a password is set without the one in force",
    columns: {
      id: 'uuid',
      tenant_id: 'uuid',
      token_hash: 'bytea',
      user_id: 'uuid',
      permissions: 'text[]',
      created_at: 'timestamptz',
      expires_at: 'timestamptz',
      last_used_at: 'timestamptz',
    },
  },
];

/** The module that declares it provides each identity table (ModuleDefinition.identityTables). */
export function identityTableProviders(
  modules: readonly { name: string; identityTables?: readonly IdentityTableName[] }[],
): Map<IdentityTableName, string> {
  const providers = new Map<IdentityTableName, string>();
  for (const module of modules) for (const table of module.identityTables ?? []) providers.set(table, module.name);
  return providers;
}
