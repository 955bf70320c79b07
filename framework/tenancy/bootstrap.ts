import type { Services } from '../services.ts';
import { createTenant } from './create-tenant.ts';

export const OPERATOR_SLUG = 'operator';

/**
 * On an empty database the first start creates the operator tenant on server.public_host. Two
 * processes starting together serialise on an advisory lock so exactly one creates it.
 */
export async function ensureOperatorTenant(services: Services): Promise<{ created: boolean }> {
  const { db, config } = services;
  const client = await db.pool.connect();
  try {
    await client.query('select pg_advisory_lock(7265441002)');
    const existing = await client.query('select 1 from tenants limit 1');
    if ((existing.rowCount ?? 0) > 0) return { created: false };
    const host = config.server.public_host.toLowerCase().replace(/:\d+$/, '');
    const placeholder = { id: '00000000-0000-0000-0000-000000000000', slug: OPERATOR_SLUG, isOperator: true };
    await services.transactions.run(placeholder, (ctx) =>
      createTenant(ctx, services, { slug: OPERATOR_SLUG, name: 'Operator', host, isOperator: true }),
    );
    return { created: true };
  } finally {
    await client.query('select pg_advisory_unlock(7265441002)').catch(() => {});
    client.release();
  }
}
