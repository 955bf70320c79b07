import { parseArgs } from 'node:util';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { loadConfig, ConfigError } from './config/load.ts';
import { startEmbeddedPostgres, ensureDatabase, type EmbeddedServer } from './db/embedded.ts';
import { redactUrl } from './db/pool.ts';
import { buildApp, type App, type Role } from './app.ts';
import { allModules } from '../modules/index.ts';

const ROLES: readonly Role[] = ['web', 'worker', 'all'];

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { role: { type: 'string', default: 'all' }, config: { type: 'string', default: 'config.yaml' } },
  });
  const role = values.role as Role;
  if (!ROLES.includes(role)) throw new ConfigError(`--role must be one of ${ROLES.join(', ')} (got ${values.role})`);
  const config = loadConfig(values.config);
  const log = pino({ level: config.server.log_level }) as FastifyBaseLogger;

  let embedded: EmbeddedServer | undefined;
  let databaseUrl = config.database.url;
  if (!databaseUrl) {
    embedded = await startEmbeddedPostgres({ dir: config.database.embedded_dir, port: config.database.embedded_port });
    databaseUrl = await ensureDatabase(embedded.adminUrl, 'tenantry');
  }

  let app: App;
  try {
    app = await buildApp({ config, modules: allModules, databaseUrl, role, logger: log });
  } catch (err) {
    await embedded?.stop();
    throw err;
  }
  if (app.services.mailer.mode === 'memory') {
    log.warn('mail.host is not set: mail goes to an in-memory mailbox and is not delivered');
  }
  let url: string | undefined;
  if (app.web) {
    url = await app.web.listen({ host: config.server.host, port: config.server.port });
  }
  log.info(
    {
      role,
      node: process.version,
      url,
      publicHost: config.server.public_host,
      database: embedded ? `embedded PostgreSQL in ${config.database.embedded_dir} (port ${embedded.port})` : redactUrl(databaseUrl),
      mail: app.services.mailer.mode === 'smtp' ? `smtp ${config.mail.host}:${config.mail.port}` : 'in-memory mailbox',
    },
    'tenantry started',
  );

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: no new requests, finishing in-flight ones');
    const force = setTimeout(() => process.exit(1), 30_000).unref();
    try {
      await app.close();
      await embedded?.stop();
      clearTimeout(force);
      log.info('stopped');
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err: Error) => {
  const known = ['ConfigError', 'BootCheckError', 'MigrationError'].includes(err.name);
  process.stderr.write(`tenantry: ${known ? err.message : (err.stack ?? err.message)}\n`);
  process.exit(1);
});
