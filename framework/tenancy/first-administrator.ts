import { sql } from 'kysely';
import type { Services } from '../services.ts';
import { isLocalHost, publicOrigin } from '../config/rules.ts';

/** The command that makes a person the operator tenant's first administrator, as a newcomer types it. */
export const FIRST_ADMINISTRATOR_COMMAND = 'npm run admin:invite -- <you@example.com>';

/** True while the operator tenant has nobody (no user of any status): the installation is new. */
export async function operatorHasNoUser(services: Services): Promise<boolean> {
  const { rows } = await services.db.pool.query<{ id: string; slug: string }>(
    'select id, slug from tenants where is_operator',
  );
  const operator = rows[0];
  if (!operator) return true;
  return services.transactions.run({ id: operator.id, slug: operator.slug, isOperator: true }, async (ctx) => {
    const found = await sql`select 1 from users limit 1`.execute(ctx.db);
    return found.rows.length === 0;
  });
}

/**
 * The address a person opens to reach the operator tenant: its host (server.public_host) on the
 * port this process listens on, not the bound address, which names no tenant. A public host sits
 * behind a TLS-terminating proxy (https, the proxy's port).
 */
export function operatorUrl(publicHost: string, listeningPort: number): string {
  const withPort = /^(.*):(\d+)$/.exec(publicHost);
  const name = (withPort ? withPort[1]! : publicHost).toLowerCase();
  if (withPort) return `${isLocalHost(name) ? 'http' : 'https'}://${name}:${withPort[2]}`;
  return publicOrigin(name, listeningPort);
}
