import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import pino from 'pino';
import type { Config } from './config/schema.ts';
import type { ModuleDefinition } from './entity/define.ts';
import { Registry } from './entity/registry.ts';
import { openDatabase, type Db } from './db/pool.ts';
import { runMigrations, type MigrationSource } from './db/migrate.ts';
import { checkTables } from './entity/table-check.ts';
import { HostResolver } from './context/host-cache.ts';
import { PublicReadCache } from './context/public-read-cache.ts';
import { ChangeListener } from './db/listener.ts';
import { TenantTransactions } from './context/tx.ts';
import { createMailer, type Mailer } from './mail/mailer.ts';
import { buildWeb } from './http/web.ts';
import { Worker } from './events/worker.ts';
import { OutboxSignal } from './events/outbox-signal.ts';
import { ensureOperatorTenant } from './tenancy/bootstrap.ts';
import type { Services } from './services.ts';
import { systemClock, type Clock } from './clock.ts';

export type Role = 'web' | 'worker' | 'all';

export const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));

export function migrationSources(modules: readonly ModuleDefinition[]): MigrationSource[] {
  return [
    { owner: 'framework', dir: resolve(ROOT, 'migrations/framework') },
    ...modules.map((m) => ({ owner: m.name, dir: m.migrations ?? resolve(ROOT, 'migrations', m.name) })),
  ];
}

export interface AppOptions {
  config: Config;
  modules: readonly ModuleDefinition[];
  databaseUrl: string;
  role: Role;
  logger?: FastifyBaseLogger;
  mailer?: Mailer;
  /** Tests build several apps on one database and start the worker themselves. */
  startWorker?: boolean;
  scheduleJobs?: boolean;
  /** The system clock unless given: tests and the job command set their own. */
  clock?: Clock;
}

export interface App {
  services: Services;
  web: FastifyInstance | undefined;
  worker: Worker | undefined;
  close(): Promise<void>;
}

/**
 * Composition only: checks the declarations (refusing to start on any inconsistency), migrates,
 * checks the tables agree with the declarations, makes sure the operator tenant exists, then
 * builds the web server and/or the worker.
 */
export async function buildApp(options: AppOptions): Promise<App> {
  const registry = new Registry(options.modules, options.config);
  const log = options.logger ?? (pino({ level: 'silent' }) as FastifyBaseLogger);
  const db: Db = openDatabase(options.databaseUrl, { size: options.config.database.pool_size, acquireTimeoutMs: options.config.database.acquire_timeout_ms });
  try {
    const applied = await runMigrations(db.pool, migrationSources(options.modules));
    if (applied.length) log.info({ migrations: applied.map((m) => `${m.owner}/${m.name}`) }, 'migrations applied');
    await checkTables(db.pool, registry);
    const hosts = new HostResolver(db);
    const publicReads = new PublicReadCache();
    const listener = new ChangeListener(db.url);
    hosts.listen(listener);
    publicReads.listen(listener);
    for (const entity of registry.entities) {
      if (entity.def.publicRead) registry.ops(entity.names.key).onCommittedWrite((tenantId) => publicReads.evict(entity.names.table, tenantId));
    }
    const outbox = new OutboxSignal(db.pool);
    const clock = options.clock ?? systemClock;
    const services: Services = {
      config: options.config,
      db,
      registry,
      transactions: new TenantTransactions(db, registry.events, outbox, clock),
      hosts,
      publicReads,
      mailer: options.mailer ?? createMailer(options.config.mail),
      log,
      clock,
    };
    const { created } = await ensureOperatorTenant(services);
    if (created) log.info({ host: options.config.server.public_host }, 'created the operator tenant');
    await listener.start();

    const web = options.role === 'worker' ? undefined : await buildWeb(services, { logger: log });
    const worker = options.role === 'web' ? undefined : new Worker(services);
    if (worker && options.startWorker !== false) {
      await worker.start({ schedule: options.scheduleJobs !== false });
      outbox.relayHere(() => void worker.relay.wake());
    }
    return {
      services,
      web,
      worker,
      close: async () => {
        await web?.close();
        await worker?.stop();
        await listener.close();
        services.mailer.close();
        await db.close();
      },
    };
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
}
