import { createHmac } from 'node:crypto';
import type pg from 'pg';

/**
 * The installation's secret (migrations/framework/0011_installation_secret.sql): made once by the
 * migration on the first start, the same in every process, kept across restarts, readable only by
 * the service's own database user (never by a tenant transaction). Read once at boot; never
 * logged, never sent anywhere. Each use takes a key of its own derived from it (`keyFor`), so
 * a key given to one purpose says nothing of another's.
 */
export async function readInstallationSecret(pool: pg.Pool): Promise<Buffer> {
  const { rows } = await pool.query<{ secret: Buffer }>('select secret from installation_secret');
  const secret = rows[0]?.secret;
  if (secret?.length !== 32) throw new Error('the installation secret is missing: run the migrations');
  return secret;
}

/** The key for one purpose (e.g. 'cursor'): HMAC-SHA256 of the purpose's name under the secret. */
export const keyFor = (secret: Buffer, purpose: string): Buffer =>
  createHmac('sha256', secret).update(`tenantry key: ${purpose}`).digest();
