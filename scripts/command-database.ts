import pg from 'pg';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../framework/config/schema.ts';
import type { App } from '../framework/app.ts';
import type { Clock } from '../framework/clock.ts';
import type { ModuleDefinition } from '../framework/entity/define.ts';
import {
  embeddedAdminUrl,
  ensureDatabase,
  runningServer,
  startEmbeddedPostgres,
  type EmbeddedServer,
} from '../framework/db/embedded.ts';

/** The command cannot reach a database: its message is one line that says what to set. */
export class CommandDatabaseError extends Error {
  override name = 'CommandDatabaseError';
}

const REFUSALS = new Set([
  'ConfigError',
  'CommandDatabaseError',
  'BootCheckError',
  'MigrationError',
  'DatabaseConnectError',
]);

/**
 * A refusal an operator command prints as its message alone (it says what to change); anything
 * else is a defect, printed with its stack.
 */
export const isCommandRefusal = (err: Error): boolean => REFUSALS.has(err.name);

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

const WHAT_TO_SET =
  "run the command with the service's settings (TENANTRY_DATABASE_EMBEDDED_DIR and TENANTRY_DATABASE_EMBEDDED_PORT), or set TENANTRY_DATABASE_URL";

/**
 * The database an operator command works on: database.direct_url when set (PostgreSQL itself, not
 * a pooler: a command migrates, and may hold its connections for a while), else database.url;
 * otherwise the embedded
 * PostgreSQL the running service holds (found through its data directory's lock file, whatever
 * port it was started on, or else on database.embedded_port), or one this command starts for its
 * own duration (then returned, for the command to stop). A server it cannot reach or start is a
 * CommandDatabaseError naming what to set, never a stack trace.
 */
export async function commandDatabase(config: Config): Promise<{ databaseUrl: string; embedded?: EmbeddedServer }> {
  const given = config.database.direct_url || config.database.url;
  if (given) return { databaseUrl: given };
  const dir = config.database.embedded_dir;
  const holder = runningServer(dir);
  if (holder) {
    if (await reachable(holder.adminUrl)) return { databaseUrl: await ensureDatabase(holder.adminUrl, 'tenantry') };
    throw new CommandDatabaseError(
      `the embedded PostgreSQL in ${dir} is running (process ${holder.pid}, port ${holder.port}) but does not answer there: wait until it has started, or set TENANTRY_DATABASE_URL`,
    );
  }
  const onPort = embeddedAdminUrl('127.0.0.1', config.database.embedded_port);
  if (await reachable(onPort)) return { databaseUrl: await ensureDatabase(onPort, 'tenantry') };
  let embedded: EmbeddedServer;
  try {
    embedded = await startEmbeddedPostgres({ dir, port: config.database.embedded_port });
  } catch (err) {
    throw new CommandDatabaseError(`${(err as Error).message.replace(/\s+/g, ' ').trim()}; ${WHAT_TO_SET}`);
  }
  try {
    return { databaseUrl: await ensureDatabase(embedded.adminUrl, 'tenantry'), embedded };
  } catch (err) {
    await embedded.stop();
    throw err;
  }
}

export interface CommandApp {
  app: App;
  /** Closes the app, then stops the embedded server if the command started it. */
  close(): Promise<void>;
}

/**
 * The app an operator command works with (admin:invite, job): on the command's database, built
 * with role `command`, so it opens no listener (no HTTP server, no metrics port: the service beside
 * it holds those) and runs no worker. Warnings and errors go to stderr.
 */
export async function openCommandApp(
  config: Config,
  options: { modules: readonly ModuleDefinition[]; clock?: Clock },
): Promise<CommandApp> {
  const { buildApp } = await import('../framework/app.ts');
  const { databaseUrl, embedded } = await commandDatabase(config);
  let app: App;
  try {
    app = await buildApp({
      config,
      modules: options.modules,
      databaseUrl,
      role: 'command',
      ...(options.clock ? { clock: options.clock } : {}),
      logger: pino({ level: 'warn' }, pino.destination(2)) as FastifyBaseLogger,
    });
  } catch (err) {
    await embedded?.stop();
    throw err;
  }
  return {
    app,
    close: async () => {
      try {
        await app.close();
      } finally {
        await embedded?.stop();
      }
    },
  };
}
