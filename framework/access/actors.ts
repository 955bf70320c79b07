import { sql } from 'kysely';
import type { TxContext } from '../context/tx.ts';
import type { ResolvedEntity } from '../entity/resolve.ts';
import { problem } from '../errors.ts';
import { roleDirectory } from './roles.ts';
import type { Narrowing } from '../contracts/operations.ts';

/**
 * People who can act (CommandDefinition.actors): a command's body field naming a person who is
 * then to do something with the row, such as a task's assignee, who must be able to open it. Such
 * a person is a live, active user of the tenant (one who can sign in) whose roles grant the
 * field's permission, or `*`. The command refuses anyone else before it runs, saying why, and the
 * admin shell's picker for the field offers nobody else (never a deactivated user).
 *
 * The person is read from the identity table users (its status and roles: identity-tables.ts),
 * and their permissions are resolved by the role reads (roles.ts), as the opening statement
 * resolves a caller's: no module's SQL on another module's table.
 */

/** A field's rule: the permission the named person must hold. */
export type ActorPermissions = Readonly<Record<string, string>>;

/** The user an actor field names, as the identity reads see them; undefined when no live user has the id. */
async function personOf(ctx: TxContext, userId: string): Promise<{ status: string; roles: string[] } | undefined> {
  const { rows } = await sql<{
    status: string;
    roles: string[];
  }>`select status, roles from users where id = ${userId}::uuid and deleted_at is null`.execute(ctx.db);
  return rows[0];
}

/** What the person could not do without the permission, in words: the entity's read permission reads as "read tasks". */
const deed = (entity: ResolvedEntity, permission: string): string =>
  permission === entity.def.permissions.read ? `read ${entity.names.labelPlural.toLowerCase()}` : `use ${permission}`;

/**
 * Why the user `userId` cannot act on a row of `entity` with `permission`, in a sentence; undefined
 * when they can.
 */
export async function whyCannotAct(
  ctx: TxContext,
  entity: ResolvedEntity,
  userId: string,
  permission: string,
): Promise<string | undefined> {
  const person = await personOf(ctx, userId);
  if (!person) return 'no such user in this tenant';
  if (person.status !== 'active')
    return `this user is ${person.status}, not active, so they cannot sign in to act on the ${entity.names.label.toLowerCase()}`;
  if (!(await roleDirectory.grants(ctx, person.roles, permission)))
    return `this user cannot ${deed(entity, permission)}: none of their roles grants ${permission}, so they could not open the ${entity.names.label.toLowerCase()}`;
  return undefined;
}

/**
 * Refuses (422 VALIDATION_FAILED, pointing at the field) a command body naming, in one of its actor
 * fields, somebody who cannot act. A field left out or null names nobody and is not checked.
 */
export async function refuseNonActors(
  ctx: TxContext,
  entity: ResolvedEntity,
  actors: ActorPermissions | undefined,
  body: unknown,
): Promise<void> {
  if (!actors || typeof body !== 'object' || body === null) return;
  for (const [field, permission] of Object.entries(actors)) {
    const userId = (body as Record<string, unknown>)[field];
    if (typeof userId !== 'string') continue;
    const why = await whyCannotAct(ctx, entity, userId, permission);
    if (why)
      throw problem('VALIDATION_FAILED', `${field}: ${why}`, { errors: [{ pointer: `/body/${field}`, message: why }] });
  }
}

export type { Narrowing } from '../contracts/operations.ts';

/** The users who can act with `permission`: active, holding a role that grants it (the roles are read now). */
export async function actorsNarrowing(ctx: TxContext, permission: string): Promise<Narrowing> {
  const roles = await roleDirectory.granting(ctx, permission);
  return (first) => ({ sql: `"status" = 'active' and "roles" && $${first}::text[]`, params: [roles] });
}
