import Type from 'typebox';
import { defineRoute } from '../../framework/entity/define.ts';
import type { ModuleRegistry as Registry, TenantRef, TxContext } from '../../framework/entity/define.ts';
import { notFound, problem } from '../../framework/errors.ts';
import { pageSchema, type Page } from '../../framework/operations/paging.ts';
import { QueryList } from '../../framework/query/query-list.ts';
import { usersService } from '../user/users-service.ts';
import { WILDCARD } from '../../framework/access/roles.ts';
import { refuseTokenCaller } from '../../framework/access/credentials.ts';
import { administrators } from '../user/administrators.ts';
import './auth-tables.ts';

const RoleSchema = Type.Object(
  {
    name: Type.String(),
    permissions: Type.Array(Type.String(), { description: 'Sorted; "*" grants every permission' }),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false, title: 'Role' },
);

export const ROLE_NAME_PATTERN = '^[a-z0-9][a-z0-9_.:-]{0,62}$';

// The framework's pager takes its select as SQL text fixed here; the route below selects the same
// row with the typed builder (ROLE_ROW).
const ROLE_COLUMN_LIST = 'name, permissions, created_at as "createdAt", updated_at as "updatedAt"';
const ROLE_ROW = ['name', 'permissions', 'created_at as createdAt', 'updated_at as updatedAt'] as const;

/**
 * The roles list, through the query language like every list: by name (`name=startsWith.support`),
 * by permission (`permissions=contains.task:read`), by creation or change time. Named, not
 * numbered: a role's name is its key, so it is the list's tie-breaker too.
 */
export const roleList = new QueryList({
  label: 'roles',
  item: RoleSchema,
  select: ROLE_COLUMN_LIST,
  from: 'roles',
  id: 'name',
  idType: 'text',
  columns: { name: 'name', permissions: 'permissions', createdAt: 'created_at', updatedAt: 'updated_at' },
  indexed: ['name'],
  defaultSort: 'name',
  sortDescription: 'By name unless sort asks for another order.',
});

/**
 * Checks a permission list against what the installation defines: 422 PERMISSION_UNKNOWN for a
 * name no module declares, 422 PERMISSION_OPERATOR_ONLY for an operator permission outside the
 * operator tenant. Returns the list deduplicated and sorted, as it is stored.
 */
export function checkedPermissions(registry: Registry, tenant: TenantRef, permissions: readonly string[]): string[] {
  const list = [...new Set(permissions.map((p) => p.trim()))].sort();
  // The pointer names the value as sent, which may carry the spaces trimmed off here.
  const pointer = (p: string) => `/body/permissions/${permissions.findIndex((sent) => sent.trim() === p)}`;
  const unknown = list.filter((p) => p !== '*' && !registry.permissions.has(p));
  if (unknown.length > 0) {
    throw problem('PERMISSION_UNKNOWN', `No module defines ${unknown.join(', ')}`, {
      errors: unknown.map((p) => ({
        pointer: pointer(p),
        message: `unknown permission ${p}`,
      })),
      extensions: { permissions: unknown },
    });
  }
  const operatorOnly = list.filter((p) => registry.isOperatorPermission(p));
  if (operatorOnly.length > 0 && !tenant.isOperator) {
    throw problem('PERMISSION_OPERATOR_ONLY', `${operatorOnly.join(', ')} may be held only in the operator tenant`, {
      errors: operatorOnly.map((p) => ({
        pointer: pointer(p),
        message: `operator permission ${p}`,
      })),
      extensions: { permissions: operatorOnly },
    });
  }
  return list;
}

export interface RoleView {
  name: string;
  permissions: string[];
  createdAt: Date;
  updatedAt: Date;
}

/** A page of the tenant's roles as the query string asks (by name by default): for the API route and the admin shell alike. */
export async function listRoles(tx: TxContext, query: Record<string, unknown>): Promise<Page<RoleView>> {
  return (await roleList.page(tx, query)).page as unknown as Page<RoleView>;
}

/** One role by name, or undefined. */
export async function readRole(tx: TxContext, name: string): Promise<RoleView | undefined> {
  return tx.db.selectFrom('roles').select(ROLE_ROW).where('name', '=', name).executeTakeFirst();
}

/**
 * Creates or replaces a role's permission list, checked like every write of it (checkedPermissions),
 * and publishes auth.role_set when the list changed. The PUT route and the admin shell's role form
 * both go through here, so the same rules apply to both. What a role grants is for a signed-in
 * session to change, never a personal access token (framework/access/credentials.ts).
 */
export async function setRole(
  tx: TxContext,
  registry: Registry,
  name: string,
  permissions: readonly string[],
): Promise<{ role: RoleView; created: boolean }> {
  refuseTokenCaller(tx, "Changing a role's permissions");
  const after = checkedPermissions(registry, tx.tenant, permissions);
  const existing = await tx.db
    .selectFrom('roles')
    .select('permissions')
    .where('name', '=', name)
    .forUpdate()
    .executeTakeFirst();
  const before = existing ? [...existing.permissions].sort() : null;
  const changed = before === null || before.length !== after.length || before.some((p, i) => p !== after[i]);
  // Dropping * may take the tenant's last administrator away: 409 LAST_ADMINISTRATOR, nothing written.
  if (before?.includes(WILDCARD) && !after.includes(WILDCARD))
    await administrators.assertOneRemains(tx, { role: name });
  const role = changed
    ? await tx.db
        .insertInto('roles')
        .values({ name, permissions: after })
        .onConflict((oc) =>
          oc
            .columns(['tenant_id', 'name'])
            .doUpdateSet((eb) => ({ permissions: eb.ref('excluded.permissions'), updated_at: tx.now })),
        )
        .returning(ROLE_ROW)
        .executeTakeFirstOrThrow()
    : await tx.db.selectFrom('roles').select(ROLE_ROW).where('name', '=', name).executeTakeFirstOrThrow();
  if (changed) tx.publish('auth.role_set', { name, before, after });
  return { role, created: before === null };
}

/**
 * Deletes a role: takes it from every user holding it (user.roles_set for each, through the
 * users service), then deletes it and publishes auth.role_set with `after` null. 404 NOT_FOUND
 * for a role this tenant does not have; 409 LAST_ADMINISTRATOR when it is what makes the tenant's
 * last administrator, nothing written. The DELETE route and the admin shell's role form share it.
 */
export async function deleteRole(tx: TxContext, name: string): Promise<void> {
  refuseTokenCaller(tx, 'Deleting a role');
  const existing = await tx.db
    .selectFrom('roles')
    .select('permissions')
    .where('name', '=', name)
    .forUpdate()
    .executeTakeFirst();
  if (!existing) throw notFound();
  // The holders' rows first, then the administrators' lock (administrators.ts says why).
  const { heldByActive } = await usersService.removeRole(tx, name);
  if (existing.permissions.includes(WILDCARD)) await administrators.assertOneRemains(tx, { role: name, heldByActive });
  await tx.db.deleteFrom('roles').where('name', '=', name).execute();
  tx.publish('auth.role_set', { name, before: [...existing.permissions].sort(), after: null });
}

const SESSION_ONLY =
  'Takes the session cookie only: what a role grants is never changed with a personal access token (an Authorization: Bearer header is ignored here, so a token alone is 401 AUTH_REQUIRED).';

export const listRolesRoute = defineRoute({
  method: 'GET',
  url: '/api/v1/auth/roles',
  operationId: 'auth-role-list',
  summary: "List this tenant's roles",
  description:
    'The tenant\'s roles by name, filtered, sorted and paged like every list (docs/api-conventions.md, "Filters"): by name (name=startsWith.support), by permission (permissions=contains.task:read), by creation or change time; limit and offset, or after=<next>.',
  tags: ['auth'],
  access: { permission: 'role:manage' },
  schema: {
    querystring: roleList.querySchema,
    response: { 200: pageSchema(RoleSchema, "The tenant's roles by name") },
  },
  exports: roleList.exports('roles'),
  handler: ({ tx, query, reply }) => roleList.answer(tx, query, reply),
});

export const putRoleRoute = defineRoute({
  method: 'PUT',
  url: '/api/v1/auth/roles/:name',
  operationId: 'auth-role-put',
  summary: "Create or replace a role's permissions",
  description: [
    'Sends the complete permission list; it is stored deduplicated and sorted. Creates the role if new (201), else replaces its list (200).',
    '422 PERMISSION_UNKNOWN for a permission no module defines; 422 PERMISSION_OPERATOR_ONLY for an operator permission outside the operator tenant.',
    'Publishes auth.role_set with the list before (null for a new role) and after, only when the list changed.',
    "A list without * for the role that gives it to the tenant's last administrator (the last active user holding every permission) is 409 LAST_ADMINISTRATOR, nothing written.",
    SESSION_ONLY,
  ].join('\n\n'),
  tags: ['auth'],
  access: { permission: 'role:manage' },
  bearer: false,
  publishes: ['auth.role_set'],
  schema: {
    params: Type.Object({
      name: Type.String({
        pattern: ROLE_NAME_PATTERN,
        description: 'Lower-case letters, digits and _ . : -, at most 63',
      }),
    }),
    body: Type.Object(
      { permissions: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 200 }) },
      { additionalProperties: false },
    ),
    response: {
      200: { ...RoleSchema, description: 'The role, replaced' },
      201: { ...RoleSchema, description: 'The role, created' },
    },
  },
  async handler({ tx, params, body, reply, services }) {
    const { role, created } = await setRole(tx, services.registry, params.name, body.permissions);
    reply.code(created ? 201 : 200);
    return role;
  },
});

export const deleteRoleRoute = defineRoute({
  method: 'DELETE',
  url: '/api/v1/auth/roles/:name',
  operationId: 'auth-role-delete',
  summary: 'Delete a role',
  description: [
    'Deletes the role and takes it from every user holding it: each of them loses it as the roles command would take it (user.roles_set). 204 with no body.',
    "404 NOT_FOUND for a role this tenant does not have. 409 LAST_ADMINISTRATOR when the role is what makes the tenant's last administrator (the last active user holding every permission, *): nothing is deleted.",
    'Publishes auth.role_set with the list before and after null.',
    SESSION_ONLY,
  ].join('\n\n'),
  tags: ['auth'],
  access: { permission: 'role:manage' },
  bearer: false,
  publishes: ['auth.role_set', 'user.roles_set'],
  problems: { 409: "The role makes the tenant's last administrator (LAST_ADMINISTRATOR)" },
  schema: {
    params: Type.Object({
      name: Type.String({
        pattern: ROLE_NAME_PATTERN,
        description: 'Lower-case letters, digits and _ . : -, at most 63',
      }),
    }),
    response: { 204: Type.Null({ description: 'Deleted' }) },
  },
  async handler({ tx, params, reply }) {
    await deleteRole(tx, params.name);
    reply.code(204);
    return null;
  },
});
