import Type, { type Static } from 'typebox';
import { sql } from 'kysely';
import type { TxContext } from '../../framework/context/tx.ts';

/** Answer of login and of GET /api/v1/auth/me. */
export const IdentitySchema = Type.Object(
  {
    userId: Type.String({ format: 'uuid', description: 'The signed-in user' }),
    email: Type.String({ description: 'The address the user signs in with' }),
    displayName: Type.String(),
    roles: Type.Array(Type.String(), { description: 'Roles the user holds, sorted' }),
    permissions: Type.Array(Type.String(), {
      description: 'Permissions those roles resolve to, deduplicated and sorted; "*" (the wildcard) grants every permission',
    }),
  },
  { additionalProperties: false, title: 'Identity', description: 'The signed-in identity; login also sets the session cookie' },
);
export type Identity = Static<typeof IdentitySchema>;

/** The identity of a user of the transaction's tenant, permissions resolved from the stored roles. */
export async function loadIdentity(ctx: TxContext, userId: string): Promise<Identity | undefined> {
  const { rows } = await sql<Identity>`
    select u.id as "userId", u.email, u.display_name as "displayName", u.roles,
           coalesce((select array_agg(distinct p order by p)
                       from roles r cross join lateral unnest(r.permissions) p
                      where r.name = any (u.roles)), '{}') as permissions
      from users u
     where u.id = ${userId} and u.deleted_at is null`.execute(ctx.db);
  const row = rows[0];
  return row ? { ...row, roles: [...row.roles].sort() } : undefined;
}
