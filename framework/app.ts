import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import pino from 'pino';
import type { Config } from './config/schema.ts';
import type { ModuleDefinition } from './entity/define.ts';
import { compose } from './composition.ts';
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
import { blobStoreFor } from './storage/index.ts';
import { Metrics, poolState } from './observability/metrics.ts';
import { metricsPort, startMetricsServer, type MetricsServer } from './observability/metrics-server.ts';
import { databaseFigures } from './observability/metric-queries.ts';

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
  /** Where the metrics listener answers GET /metrics, when metrics.port is set. */
  metricsUrl: string | undefined;
  close(): Promise<void>;
}

/**
 * Composition only: composes the service from the declarations (composition.ts: the registry,
 * each entity's operations and routes, the job schedule) and checks them all, refusing to start
 * on any inconsistency; migrates, checks the tables agree with the declarations, makes sure the
 * operator tenant exists, then builds the web server and/or the worker.
 */
export async function buildApp(options: AppOptions): Promise<App> {
  const { registry, routes, jobs, operations } = compose(options.modules, options.config);
  const log = options.logger ?? (pino({ level: 'silent' }) as FastifyBaseLogger);
  // The installation's blob store, made here so that it logs through the service's logger.
  blobStoreFor(options.config, log);
  const metrics = metricsPort(options.config.metrics.port) ? newMetrics(() => db, log) : undefined;
  const db: Db = openDatabase(options.databaseUrl, {
    size: options.config.database.pool_size,
    acquireTimeoutMs: options.config.database.acquire_timeout_ms,
    statementTimeoutMs: options.config.database.statement_timeout_ms,
    ...(metrics ? { onAcquire: (seconds: number) => metrics.acquireWait.observe(seconds) } : {}),
  });
  let metricsServer: MetricsServer | undefined;
  try {
    const applied = await runMigrations(db.pool, migrationSources(options.modules));
    // One short line (how many, per owner); the file names at debug, where a first start's list is not a wall.
    if (applied.length) {
      log.info({ migrations: applied.length, owners: countByOwner(applied) }, 'migrations applied');
      log.debug({ migrations: applied.map((m) => `${m.owner}/${m.name}`) }, 'migrations applied: files');
    }
    await checkTables(db.pool, registry);
    const hosts = new HostResolver(db);
    const publicReads = new PublicReadCache();
    const listener = new ChangeListener(db.url);
    hosts.listen(listener);
    publicReads.listen(listener);
    for (const entity of registry.entities) {
      if (entity.def.publicRead)
        operations.of(entity.names.key).onCommittedWrite((tenantId) => publicReads.evict(entity.names.table, tenantId));
    }
    const outbox = new OutboxSignal(db.pool);
    const clock = options.clock ?? systemClock;
    const services: Services = {
      config: options.config,
      db,
      registry,
      routes,
      jobs,
      operations,
      transactions: new TenantTransactions(db, registry.events, outbox, clock),
      hosts,
      publicReads,
      mailer: options.mailer ?? createMailer(options.config.mail),
      log,
      clock,
      ...(metrics ? { metrics } : {}),
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
    const port = metricsPort(options.config.metrics.port);
    if (metrics && port)
      metricsServer = await startMetricsServer(metrics, options.config.metrics.host, port, (err) =>
        log.error({ err }, 'metrics scrape failed'),
      );
    return {
      services,
      web,
      worker,
      metricsUrl: metricsServer?.url,
      close: async () => {
        await metricsServer?.close();
        await web?.close();
        await worker?.stop();
        await listener.close();
        services.mailer.close();
        await db.close();
      },
    };
  } catch (err) {
    await metricsServer?.close();
    await db.close().catch(() => {});
    throw err;
  }
}

/** The process's series, their scrape-time gauges reading the request pool and the database. */
function newMetrics(db: () => Db, log: FastifyBaseLogger): Metrics {
  const figures = databaseFigures(() => db().pool);
  return new Metrics(
    {
      pool: () => poolState(db().pool),
      unrelayedEvents: async () => (await figures())?.unrelayed,
      tenantsByStatus: async () => (await figures())?.tenants,
    },
    (err, series) => log.warn({ err, series }, 'a metric could not be read'),
  );
}

/** `framework 8, auth 4, ...`: how many migrations each owner had applied. */
function countByOwner(applied: readonly { owner: string }[]): string {
  const counts = new Map<string, number>();
  for (const { owner } of applied) counts.set(owner, (counts.get(owner) ?? 0) + 1);
  return [...counts].map(([owner, n]) => `${owner} ${n}`).join(', ');
}
