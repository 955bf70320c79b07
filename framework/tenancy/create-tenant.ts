import { randomUUID } from 'node:crypto';
import { CompiledQuery } from 'kysely';
import { scopedContext, type TxContext } from '../context/tx.ts';
import type { TenantRef } from '../context/tenant.ts';
import type { Services } from '../services.ts';
import { insertTenant } from './control-plane.ts';
import { OPERATOR_ACTOR } from '../context/actor.ts';

export interface NewTenant {
  slug: string;
  name: string;
  host: string;
  isOperator?: boolean;
}

/** Seeded in every new tenant: admin holds the wildcard, member nothing. */
export const SEEDED_ROLES: Readonly<Record<string, readonly string[]>> = { admin: ['*'], member: [] };

/**
 * Creates a tenant, its first (primary) host (through the operator-checked control-plane function), its seeded roles and runs every module's creation
 * hook, all inside the caller's transaction: a failing hook rolls everything back. The new tenant's
 * rows are written with the transaction's tenant switched to it, then switched back.
 */
export async function createTenant(ctx: TxContext, services: Services, input: NewTenant): Promise<TenantRef> {
  const tenant: TenantRef = { id: randomUUID(), slug: input.slug, isOperator: input.isOperator ?? false };
  await insertTenant(ctx, {
    id: tenant.id,
    slug: input.slug,
    name: input.name,
    host: input.host,
    isOperator: tenant.isOperator,
  });
  await withinTenant(ctx, tenant, async (inner) => {
    const roles: Record<string, readonly string[]> = { ...SEEDED_ROLES };
    for (const module of services.registry.modules) Object.assign(roles, module.defaultRoles ?? {});
    for (const [name, permissions] of Object.entries(roles)) {
      await inner.db.executeQuery(
        CompiledQuery.raw('insert into roles (name, permissions) values ($1, $2) on conflict do nothing', [
          name,
          [...permissions],
        ]),
      );
    }
    for (const module of services.registry.modules) await module.onTenantCreated?.(inner, services);
  });
  return tenant;
}

/** Runs fn with the transaction scoped to another tenant, restoring the caller's scope afterwards. */
export async function withinTenant<T>(
  ctx: TxContext,
  tenant: TenantRef,
  fn: (inner: TxContext) => Promise<T>,
): Promise<T> {
  const scope = (id: string) =>
    ctx.db.executeQuery(CompiledQuery.raw(`select set_config('app.tenant_id', $1, true)`, [id]));
  await scope(tenant.id);
  try {
    // The caller's session is of its own tenant: in another tenant's scope it is none (its
    // permissions and its kind, cookie or token, say nothing there). In its own tenant it stays,
    // so a personal access token is still refused what only a session may do there. The operator
    // acting on a customer is the operator there, in events and history, naming none of the
    // operator's users.
    const own = tenant.id === ctx.tenant.id;
    const operator = ctx.tenant.isOperator && !own;
    const { ctx: inner, flush } = scopedContext(
      ctx.db,
      tenant,
      own ? ctx.session : null,
      operator ? null : ctx.actorId,
      ctx.declaredEvents,
      ctx.now,
      undefined,
      operator ? OPERATOR_ACTOR : ctx.actor,
    );
    const result = await fn(inner);
    await flush();
    return result;
  } finally {
    await scope(ctx.tenant.id);
  }
}
