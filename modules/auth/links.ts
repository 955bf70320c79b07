import { publicOrigin } from '../../framework/config/rules.ts';
import type { Services } from '../../framework/services.ts';
import { problem } from '../../framework/errors.ts';

/** Where the set-password page lives on every tenant host. */
export const RESET_PAGE_PATH = '/auth/reset';

/** The tenant's primary host, or its oldest host when none is marked primary. */
export async function primaryHost(services: Services, tenantId: string): Promise<string> {
  const { rows } = await services.db.pool.query<{ host: string }>(
    'select host from tenant_hosts where tenant_id = $1 order by is_primary desc, created_at, host limit 1',
    [tenantId],
  );
  const host = rows[0]?.host;
  if (!host) throw problem('INTERNAL', `tenant ${tenantId} has no host to build a link on`);
  return host;
}

/**
 * An absolute URL for a path on the tenant's primary host: https unless the host is a local name
 * (then plain http on the server's own port, see publicOrigin).
 */
export async function tenantUrl(services: Services, tenantId: string, path: string): Promise<string> {
  const host = await primaryHost(services, tenantId);
  return `${publicOrigin(host, services.config.server.port)}${path}`;
}

/** The mailed set-password link, the only place the raw token ever appears. */
export async function setPasswordLink(services: Services, tenantId: string, rawToken: string): Promise<string> {
  return tenantUrl(services, tenantId, `${RESET_PAGE_PATH}?token=${encodeURIComponent(rawToken)}`);
}
