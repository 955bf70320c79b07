import { sql } from 'kysely';
import type { TxContext } from '../context/tx.ts';

/** The permission that grants every other (the opening statement's permission predicate honours it). */
export const WILDCARD = '*';

/**
 * Role reads, over the framework's identity table `roles` (migrations/framework/0013_identity.sql).
 * The framework owns what a role means: a tenant's name for a set of permissions, `*` granting
 * all (context/opening.ts turns a user's roles into permissions; tenancy/create-tenant.ts seeds
 * admin and member). The module that administers roles (auth: its routes and pages) writes the
 * rows; any other module asks here whether roles exist or grant everything, so it depends on the
 * framework and not on that module (docs/architecture.md, "Who owns what"). Every read runs in the
 * caller's tenant transaction, so it sees only the tenant's own roles and the caller's uncommitted
 * changes.
 */
export const roleDirectory = {
  /** The names among `names` that are no role of this tenant, in the order given. */
  async unknown(ctx: TxContext, names: readonly string[]): Promise<string[]> {
    if (names.length === 0) return [];
    const { rows } = await sql<{
      name: string;
    }>`select name from roles where name = any(${[...names]}::text[])`.execute(ctx.db);
    const known = new Set(rows.map((r) => r.name));
    return names.filter((name) => !known.has(name));
  },

  /** Whether holding these roles grants every permission (one of them has `*`). */
  async grantEverything(ctx: TxContext, roles: readonly string[]): Promise<boolean> {
    if (roles.length === 0) return false;
    const { rows } =
      await sql`select 1 from roles where name = any(${[...roles]}::text[]) and permissions @> ${[WILDCARD]}::text[] limit 1`.execute(
        ctx.db,
      );
    return rows.length > 0;
  },

  /** The tenant's roles that grant `permission`: those listing it, and those holding `*`. */
  async granting(ctx: TxContext, permission: string): Promise<string[]> {
    const { rows } = await sql<{
      name: string;
    }>`select name from roles where permissions && ${[permission, WILDCARD]}::text[] order by name`.execute(ctx.db);
    return rows.map((r) => r.name);
  },

  /** Whether holding these roles grants `permission` (one of them lists it, or `*`): as the opening statement reads them. */
  async grants(ctx: TxContext, roles: readonly string[], permission: string): Promise<boolean> {
    if (roles.length === 0) return false;
    const { rows } =
      await sql`select 1 from roles where name = any(${[...roles]}::text[]) and permissions && ${[permission, WILDCARD]}::text[] limit 1`.execute(
        ctx.db,
      );
    return rows.length > 0;
  },

  /** The tenant's roles that grant every permission, leaving out `except`. */
  async grantingEverything(ctx: TxContext, options: { except?: string } = {}): Promise<string[]> {
    const { rows } = await sql<{
      name: string;
    }>`select name from roles where permissions @> ${[WILDCARD]}::text[] and name is distinct from ${options.except ?? null}::text order by name`.execute(
      ctx.db,
    );
    return rows.map((r) => r.name);
  },
} as const;
