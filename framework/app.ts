import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import pg from 'pg';
import pino from 'pino';
import type { Config } from './config/schema.ts';
import type { ModuleDefinition } from './entity/define.ts';
import { compose, type Composition } from './composition.ts';
import { openDatabase, unopenedDatabase, type Db } from './db/pool.ts';
import { runMigrations, type MigrationOptions, type MigrationSource } from './db/migrate.ts';
import { checkTables } from './entity/table-check.ts';
import { checkStoredEntitlements } from './entitlements/stored-check.ts';
import { HostResolver } from './context/host-cache.ts';
import { PublicReadCache } from './context/public-read-cache.ts';
import { ChangeListener } from './db/listener.ts';
import { ReplicaReads } from './context/replica-reads.ts';
import { TenantTransactions } from './context/tx.ts';
import { createMailer, type Mailer } from './mail/mailer.ts';
import { buildWeb } from './http/web.ts';
import { openApiDocument } from './openapi/document.ts';
import type { Worker } from './events/worker.ts';
import { OutboxSignal } from './events/outbox-signal.ts';
import { ensureOperatorTenant } from './tenancy/bootstrap.ts';
import type { Services } from './services.ts';
import { systemClock, type Clock } from './clock.ts';
import {
  argon2Hasher,
  argon2Verifier,
  type PasswordHasher,
  type PasswordVerifier,
} from './access/password-verifier.ts';
import { blobStoreFor, loadBlobStoreDriver } from './storage/index.ts';
import type { Metrics } from './observability/metrics.ts';
import { metricsPort, startMetricsServer, type MetricsServer } from './observability/metrics-server.ts';
import { databaseFigures } from './observability/metric-queries.ts';
import { keyFor, readInstallationSecret } from './access/installation-secret.ts';
import { CursorSeal } from './operations/cursor.ts';
import { LiveHub } from './live/hub.ts';
import { LinkSeal } from './access/signed-links.ts';
import { PlanLimits } from './entitlements/limits.ts';
import { DatabaseConnectError } from './start-failure.ts';

/** The service's process roles (`--role`). */
export type Role = 'web' | 'worker' | 'all';

/**
 * What an app is built for: a service role, or `command`, an operator command run beside the
 * service with its environment (npm run admin:invite, npm run job). A command builds neither the web
 * server nor the worker and opens no listener of any kind: the metrics port, like the HTTP port,
 * belongs to the service.
 */
export type AppRole = Role | 'command';

const servesHttp = (role: AppRole) => role === 'web' || role === 'all';
const works = (role: AppRole) => role === 'worker' || role === 'all';
/** Only a service opens the metrics listener (and so counts): a command's series would have no scraper. */
const exposesMetrics = (role: AppRole) => role !== 'command';

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
  role: AppRole;
  logger?: FastifyBaseLogger;
  mailer?: Mailer;
  /** Tests build several apps on one database and start the worker themselves. */
  startWorker?: boolean;
  scheduleJobs?: boolean;
  /** The system clock unless given: tests and the job command set their own. */
  clock?: Clock;
  /** argon2's own unless given: a test counts the verifications a request runs through its own. */
  passwordVerifier?: PasswordVerifier;
  /** argon2id's own unless given: a test watches where hashing runs through its own. */
  passwordHasher?: PasswordHasher;
}

export interface App {
  services: Services;
  web: FastifyInstance | undefined;
  worker: Worker | undefined;
  /** Where the metrics listener answers GET /metrics, when metrics.port is set (a service role only). */
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
  const composition = compose(options.modules, options.config);
  const { registry } = composition;
  const log = options.logger ?? (pino({ level: 'silent' }) as FastifyBaseLogger);
  // The installation's blob store, made here so that it logs through the service's logger.
  await loadBlobStoreDriver(options.config);
  blobStoreFor(options.config, log);
  const port = exposesMetrics(options.role) ? metricsPort(options.config.metrics.port) : undefined;
  const metrics = port ? await newMetrics(() => db, log) : undefined;
  const db: Db = openDatabase(options.databaseUrl, {
    size: options.config.database.pool_size,
    acquireTimeoutMs: options.config.database.acquire_timeout_ms,
    statementTimeoutMs: options.config.database.statement_timeout_ms,
    directUrl: options.config.database.direct_url || options.databaseUrl,
    preparedStatements: options.config.database.prepared_statements,
    ...(metrics ? { onAcquire: (seconds: number) => metrics.acquireWait.observe(seconds) } : {}),
  });
  let metricsServer: MetricsServer | undefined;
  let replica: ReplicaReads | undefined;
  try {
    const { url, direct_url } = options.config.database;
    const setting = direct_url ? 'database.direct_url' : url ? 'database.url' : 'the embedded PostgreSQL';
    const applied = await migrateDirectly(db.directUrl, setting, migrationSources(options.modules), {
      allowChanged: options.config.database.allow_changed_migrations,
    });
    // One short line (how many, per owner); the file names at debug, where a first start's list is not a wall.
    if (applied.length) {
      log.info({ migrations: applied.length, owners: countByOwner(applied) }, 'migrations applied');
      log.debug({ migrations: applied.map((m) => `${m.owner}/${m.name}`) }, 'migrations applied: files');
    }
    await checkTables(db.pool, registry);
    await checkStoredEntitlements(db.pool, options.modules, registry);
    // The installation's secret, read once: list cursors are signed with a key derived from it.
    const secret = await readInstallationSecret(db.pool);
    const cursors = new CursorSeal(keyFor(secret, 'cursor'));
    const links = new LinkSeal(keyFor(secret, 'signed link'));
    const requestDigestKey = keyFor(secret, 'idempotent request');
    const {
      services,
      listener,
      outbox,
      replica: opened,
      live,
    } = composeServices(options, composition, db, log, metrics, cursors, links, requestDigestKey, {
      replica: servesHttp(options.role),
    });
    replica = opened;
    const { created } = await ensureOperatorTenant(services);
    if (created) log.info({ host: options.config.server.public_host }, 'created the operator tenant');
    await listener.start();
    await replica?.start();

    if (servesHttp(options.role)) await live.start();
    const web = servesHttp(options.role) ? await buildWeb(services, { logger: log }) : undefined;
    // Loaded by the roles that work only: a web process holds none of the job queue's code.
    const worker = works(options.role) ? new (await import('./events/worker.ts')).Worker(services) : undefined;
    if (worker && options.startWorker !== false) {
      await worker.start({ schedule: options.scheduleJobs !== false });
      outbox.relayHere(() => worker.relay.committed());
    }
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
        await services.live.close();
        await worker?.stop();
        await listener.close();
        services.mailer.close();
        await replica?.close();
        await db.close();
      },
    };
  } catch (err) {
    await metricsServer?.close();
    await replica?.close().catch(() => {});
    await db.close().catch(() => {});
    throw err;
  }
}

/**
 * The process-wide services over a database (opened by the caller) and the process's LISTEN
 * connection (started by the caller, if at all): what every app shares, whatever it is built for.
 */
function composeServices(
  options: Pick<AppOptions, 'config' | 'mailer' | 'clock' | 'passwordVerifier' | 'passwordHasher'>,
  { registry, routes, jobs, operations, live: sources }: Composition,
  db: Db,
  log: FastifyBaseLogger,
  metrics: Metrics | undefined,
  cursors: CursorSeal,
  links: LinkSeal,
  requestDigestKey: Buffer,
  opens: { replica: boolean } = { replica: false },
): {
  services: Services;
  listener: ChangeListener;
  outbox: OutboxSignal;
  replica: ReplicaReads | undefined;
  live: LiveHub;
} {
  const hosts = new HostResolver(db);
  const publicReads = new PublicReadCache();
  const listener = new ChangeListener(db.directUrl);
  hosts.listen(listener);
  publicReads.listen(listener);
  for (const entity of registry.entities) {
    if (entity.def.publicRead)
      operations.of(entity.names.key).onCommittedWrite((tenantId) => publicReads.evict(entity.names.table, tenantId));
  }
  const outbox = new OutboxSignal(db.pool);
  const clock = options.clock ?? systemClock;
  const transactions = new TenantTransactions(db, registry.events, outbox, clock, cursors, {
    entitlementDefaults: options.config.billing.default_entitlements,
    planLimits: new PlanLimits(
      registry.limits,
      options.config.billing.default_entitlements,
      registry.features.keys(),
      registry.planEntitlementsSql,
    ),
    planEntitlementsSql: registry.planEntitlementsSql,
  });
  const replica = opens.replica
    ? replicaReads(options.config, registry.events, transactions, clock, cursors, metrics, registry.planEntitlementsSql)
    : undefined;
  // Learns of relayed changes on the process's listener; serves streams once a web role starts it.
  const live = new LiveHub({
    db,
    transactions,
    config: options.config.live,
    sources,
    log,
    metrics,
  });
  live.listen(listener);
  const services: Services = {
    config: options.config,
    db,
    registry,
    routes,
    jobs,
    operations,
    transactions,
    live,
    ...(replica ? { replica } : {}),
    cursors,
    links,
    requestDigestKey,
    hosts,
    publicReads,
    mailer: options.mailer ?? createMailer(options.config.mail),
    log,
    clock,
    passwordVerifier: options.passwordVerifier ?? argon2Verifier,
    passwordHasher: options.passwordHasher ?? argon2Hasher,
    ...(metrics ? { metrics } : {}),
  };
  return { services, listener, outbox, replica, live };
}

/**
 * The OpenAPI document the service serves at /api/v1/openapi.json, from the declarations alone:
 * the web layer is built as the service builds it (the same composition, routes, schemas and
 * document), over a database it never opens (unopenedDatabase: any query would fail), with no
 * migration and no listener. So exporting it (npm run openapi:export, and with it npm run check)
 * needs no PostgreSQL, and works beside a running service.
 */
export async function exportOpenApiDocument(options: {
  config: Config;
  modules: readonly ModuleDefinition[];
}): Promise<Record<string, unknown>> {
  const composition = compose(options.modules, options.config);
  const log = pino({ level: 'silent' }) as FastifyBaseLogger;
  const db = unopenedDatabase();
  // No request is served here: the document needs a seal, never a secret.
  const { services } = composeServices(
    options,
    composition,
    db,
    log,
    undefined,
    new CursorSeal(randomBytes(32)),
    new LinkSeal(randomBytes(32)),
    randomBytes(32),
  );
  try {
    const web = await buildWeb(services);
    try {
      await web.ready();
      return openApiDocument(web);
    } finally {
      await web.close();
    }
  } finally {
    services.mailer.close();
    await db.close();
  }
}

/**
 * The process's series, their scrape-time gauges reading the request pool and the database.
 * Loaded only when metrics.port is set (off by default): a process without a metrics listener
 * holds none of prom-client.
 */
async function newMetrics(db: () => Db, log: FastifyBaseLogger): Promise<Metrics> {
  const { Metrics, poolState } = await import('./observability/metrics.ts');
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

/**
 * The read replica, when database.replica_url names one: a pool of its own (the request pool's
 * settings) and tenant transactions over it that write nothing (db: context/replica-reads.ts).
 */
function replicaReads(
  config: Config,
  events: ReadonlySet<string>,
  primary: TenantTransactions,
  clock: Clock,
  cursors: CursorSeal,
  metrics: Metrics | undefined,
  planEntitlementsSql: ((tenant: string) => string) | undefined,
): ReplicaReads | undefined {
  const { replica_url: url, replica_max_lag_ms: maxLagMs } = config.database;
  if (!url) return undefined;
  const db = openDatabase(url, {
    size: config.database.pool_size,
    acquireTimeoutMs: config.database.acquire_timeout_ms,
    statementTimeoutMs: config.database.statement_timeout_ms,
    preparedStatements: config.database.prepared_statements,
  });
  const onReplica = new TenantTransactions(db, events, undefined, clock, cursors, {
    replica: true,
    entitlementDefaults: config.billing.default_entitlements,
    planEntitlementsSql,
  });
  return new ReplicaReads(db, onReplica, primary, maxLagMs, metrics?.replicaSeries());
}

/**
 * Migrates on a connection of its own to database.direct_url: PostgreSQL itself, not a pooler in
 * transaction mode. Each file's transaction takes the lock (db/migrate.ts), so none would leak
 * through a pooler either; directly, the migrations' long statements hold no pooled connection.
 */
async function migrateDirectly(url: string, setting: string, sources: MigrationSource[], options: MigrationOptions) {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  pool.on('error', () => {});
  try {
    // The start's first connection: its failure names the setting (the pool keeps the connection for the run).
    await pool.connect().then(
      (client) => client.release(),
      (err: unknown) => {
        throw new DatabaseConnectError(setting, err);
      },
    );
    return await runMigrations(pool, sources, options);
  } finally {
    await pool.end();
  }
}

/** `framework 8, auth 4, ...`: how many migrations each owner had applied. */
function countByOwner(applied: readonly { owner: string }[]): string {
  const counts = new Map<string, number>();
  for (const { owner } of applied) counts.set(owner, (counts.get(owner) ?? 0) + 1);
  return [...counts].map(([owner, n]) => `${owner} ${n}`).join(', ');
}
