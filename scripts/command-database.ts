import pg from 'pg';
import type { Config } from '../framework/config/schema.ts';
import { ensureDatabase, startEmbeddedPostgres, type EmbeddedServer } from '../framework/db/embedded.ts';

// The embedded server's superuser, as framework/db/embedded.ts creates it.
const embeddedAdminUrl = (port: number) => `postgres://postgres:postgres@127.0.0.1:${port}/postgres`;

async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * The database an operator command works on: database.url when set; otherwise the embedded
 * PostgreSQL the running service holds, or one this command starts for its own duration (then
 * returned, for the command to stop).
 */
export async function commandDatabase(config: Config): Promise<{ databaseUrl: string; embedded?: EmbeddedServer }> {
  if (config.database.url) return { databaseUrl: config.database.url };
  const running = embeddedAdminUrl(config.database.embedded_port);
  if (await reachable(running)) return { databaseUrl: await ensureDatabase(running, 'tenantry') };
  const embedded = await startEmbeddedPostgres({
    dir: config.database.embedded_dir,
    port: config.database.embedded_port,
  });
  try {
    return { databaseUrl: await ensureDatabase(embedded.adminUrl, 'tenantry'), embedded };
  } catch (err) {
    await embedded.stop();
    throw err;
  }
}
