import { publicOrigin } from '../config/rules.ts';
import type { TxContext } from '../context/tx.ts';
import type { Services } from '../services.ts';
import { problem } from '../errors.ts';

/**
 * The transaction's tenant's primary host, or its oldest host when none is marked primary. Read
 * through the transaction: the caller holds its connection, and a second one from the pool could
 * wait for ever (tenant_hosts is global and readable in every tenant transaction).
 */
export async function primaryHost(ctx: TxContext): Promise<string> {
  const row = await ctx.db
    .selectFrom('tenant_hosts')
    .select('host')
    .where('tenant_id', '=', ctx.tenant.id)
    .orderBy('is_primary', 'desc')
    .orderBy('created_at')
    .orderBy('host')
    .limit(1)
    .executeTakeFirst();
  if (!row) throw problem('INTERNAL', `tenant ${ctx.tenant.slug} has no host to build a link on`);
  return row.host;
}

/**
 * An absolute URL for a path on the tenant's primary host, for links sent out of the request
 * (mails): https unless the host is a local name (then plain http on the server's own port, see
 * publicOrigin).
 */
export async function tenantUrl(ctx: TxContext, services: Services, path: string): Promise<string> {
  const host = await primaryHost(ctx);
  return `${publicOrigin(host, services.config.server.port)}${path}`;
}
