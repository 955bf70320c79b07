import Type, { type Static } from 'typebox';
import type { TxContext } from '../../framework/entity/define.ts';
import { usersService } from '../user/users-service.ts';
import './auth-tables.ts';

/** Answer of login and of GET /api/v1/auth/me. */
export const IdentitySchema = Type.Object(
  {
    userId: Type.String({ format: 'uuid', description: 'The signed-in user' }),
    email: Type.String({ description: 'The address the user signs in with' }),
    displayName: Type.String(),
    roles: Type.Array(Type.String(), { description: 'Roles the user holds, sorted' }),
    permissions: Type.Array(Type.String(), {
      description:
        'Permissions those roles resolve to, deduplicated and sorted; "*" (the wildcard) grants every permission',
    }),
  },
  {
    additionalProperties: false,
    title: 'Identity',
    description: 'The signed-in identity; login also sets the session cookie',
  },
);
export type Identity = Static<typeof IdentitySchema>;

/**
 * The identity of a live user of the transaction's tenant, permissions resolved from the stored
 * roles. For the caller's own session the opening statement of this transaction has resolved them
 * already, from the same rows, so only the user is read.
 */
export async function loadIdentity(ctx: TxContext, userId: string): Promise<Identity | undefined> {
  const user = await usersService.findById(ctx, userId);
  if (!user) return undefined;
  const permissions = ctx.session?.userId === userId ? ctx.session.permissions : await permissionsOf(ctx, user.roles);
  return {
    userId: user.id,
    email: user.email,
    displayName: user.displayName ?? '',
    roles: [...user.roles].sort(),
    permissions: [...new Set(permissions)].sort(),
  };
}

/** What holding these roles grants in this tenant (duplicates included). */
async function permissionsOf(ctx: TxContext, roles: readonly string[]): Promise<string[]> {
  if (roles.length === 0) return [];
  const rows = await ctx.db.selectFrom('roles').select('permissions').where('name', 'in', roles).execute();
  return rows.flatMap((row) => row.permissions);
}
