import type { TxContext } from '../../framework/entity/define.ts';
import { problem } from '../../framework/errors.ts';
import { roleDirectory } from '../../framework/access/roles.ts';
import { refuseTokenCaller } from '../../framework/access/credentials.ts';

/** Roles are stored trimmed, lower-cased, deduplicated and sorted, so equal sets compare equal. */
export function normaliseRoles(roles: readonly string[]): string[] {
  const cleaned = roles.map((r) => r.trim().toLowerCase());
  if (cleaned.some((r) => r === '')) {
    throw problem('VALIDATION_FAILED', 'a role name may not be empty', {
      errors: [{ pointer: '/body/roles', message: 'empty role name' }],
    });
  }
  return [...new Set(cleaned)].sort();
}

/**
 * Refuses (422 ROLE_UNKNOWN) any role this tenant does not have; roles are a tenant's own rows,
 * read through the framework's role reads (the sign-in area owns the table).
 */
export async function assertRolesExist(ctx: TxContext, roles: readonly string[]): Promise<void> {
  const unknown = await roleDirectory.unknown(ctx, roles);
  if (unknown.length > 0) {
    throw problem('ROLE_UNKNOWN', `no such role in this tenant: ${unknown.join(', ')}`, {
      errors: [{ pointer: '/body/roles', message: `unknown role: ${unknown.join(', ')}` }],
      extensions: { roles: unknown },
    });
  }
}

/**
 * The sorted, normalised role set of an input, refused unless every role exists here. Granting
 * roles is for a signed-in session only (framework/access/credentials.ts): a personal access
 * token's caller is refused with 401 AUTH_REQUIRED, whichever route asked.
 */
export async function checkedRoles(ctx: TxContext, roles: readonly string[]): Promise<string[]> {
  if (roles.length > 0) refuseTokenCaller(ctx, 'Granting roles');
  const normalised = normaliseRoles(roles);
  await assertRolesExist(ctx, normalised);
  return normalised;
}

export const sameRoles = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && a.every((role, i) => role === b[i]);

export interface RoleChange {
  before: string[];
  after: string[];
}

/**
 * What replacing a user's roles with the requested set changes: both sets normalised, the new one
 * refused (422 ROLE_UNKNOWN) unless every role exists here; undefined when the sets are equal.
 * Never for a personal access token's caller (401 AUTH_REQUIRED), even to take roles away.
 */
export async function roleChange(
  ctx: TxContext,
  current: readonly string[],
  requested: readonly string[],
): Promise<RoleChange | undefined> {
  refuseTokenCaller(ctx, "Changing a user's roles");
  const after = await checkedRoles(ctx, requested);
  const before = normaliseRoles(current);
  return sameRoles(before, after) ? undefined : { before, after };
}

/** user.roles_set, built in one place for the roles command and the users service. */
export function publishRolesSet(ctx: TxContext, userId: string, change: RoleChange): void {
  ctx.publish('user.roles_set', { id: userId, before: change.before, after: change.after });
}
