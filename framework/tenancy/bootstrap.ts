import { sql } from 'kysely';
import type { Services } from '../services.ts';
import { createTenant } from './create-tenant.ts';

export const OPERATOR_SLUG = 'operator';

/**
 * On an empty database the first start creates the operator tenant on server.public_host. Two
 * processes starting together serialise on a transaction-scoped advisory lock so exactly one
 * creates it. Everything happens on the transaction's own connection: a pool of size 1 must do.
 * It runs as the restricted role like any tenant transaction; tenant_create lets it create the
 * operator tenant because no tenant exists yet (the placeholder id is nobody's).
 */
export async function ensureOperatorTenant(services: Services): Promise<{ created: boolean }> {
  const { config } = services;
  const host = config.server.public_host.toLowerCase().replace(/:\d+$/, '');
  const placeholder = { id: '00000000-0000-0000-0000-000000000000', slug: OPERATOR_SLUG, isOperator: true };
  return services.transactions.run(placeholder, async (ctx) => {
    await sql`select pg_advisory_xact_lock(7265441002)`.execute(ctx.db);
    const existing = await sql`select 1 from tenants limit 1`.execute(ctx.db);
    if (existing.rows.length > 0) return { created: false };
    await createTenant(ctx, services, { slug: OPERATOR_SLUG, name: 'Operator', host, isOperator: true });
    return { created: true };
  });
}
