import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { loadConfig, ConfigError } from './config/load.ts';
import { startEmbeddedPostgres, ensureDatabase, type EmbeddedServer } from './db/embedded.ts';
import { redactUrl } from './db/pool.ts';
import { buildApp, type App, type Role } from './app.ts';
import { FIRST_ADMINISTRATOR_COMMAND, operatorHasNoUser, operatorUrl } from './tenancy/first-administrator.ts';
import type { ModuleDefinition } from './entity/define.ts';
import { effectiveLogFormat, processLogger } from './observability/log-output.ts';
import { startTracing, stopTracing } from './observability/tracing.ts';
import { startFailureLine } from './start-failure.ts';

const ROLES: readonly Role[] = ['web', 'worker', 'all'];

const SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;
// PostgreSQL's "terminating connection" codes (admin shutdown, crash shutdown, cannot connect now) and socket drops.
const DROPPED_CONNECTION = new Set(['57P01', '57P02', '57P03', 'ECONNRESET', 'EPIPE']);

/** A signal arrived while the service was starting: the start is abandoned. */
class StartInterrupted extends Error {
  override name = 'StartInterrupted';
  readonly signal: string;
  constructor(signal: string) {
    super(`stopped by ${signal} while starting`);
    this.signal = signal;
  }
}

async function main(modules: readonly ModuleDefinition[]): Promise<void> {
  // Signals stop the service gracefully: stop accepting, finish in-flight requests, then stop the
  // embedded server. The handlers are installed before anything starts. A signal while starting
  // (waiting for another process's migrations, for a database that does not answer) abandons the
  // start at once: nothing serves yet, and what was begun is PostgreSQL's to undo (each migration's
  // transaction and its lock end with the connection).
  let requested: string | undefined;
  let onStop: ((signal: string) => void) | undefined;
  let interrupt!: (signal: string) => void;
  const interrupted = new Promise<never>((_, reject) => {
    interrupt = (signal) => reject(new StartInterrupted(signal));
  });
  interrupted.catch(() => {});
  for (const signal of SIGNALS) {
    process.on(signal, () => {
      if (onStop) return onStop(signal);
      // Kept too for the moment between the start and onStop, where no race awaits the interruption.
      requested ??= signal;
      interrupt(signal);
    });
  }

  const { values } = parseArgs({
    options: { role: { type: 'string', default: 'all' }, config: { type: 'string', default: 'config.yaml' } },
  });
  const role = values.role as Role;
  if (!ROLES.includes(role)) throw new ConfigError(`--role must be one of ${ROLES.join(', ')} (got ${values.role})`);
  const config = loadConfig(values.config);
  const log = processLogger(
    config.server.log_level,
    effectiveLogFormat(config.server.log_format, process.stdout.isTTY === true),
  );
  // Traces only when the OTEL_* environment asks for them; started before anything is built.
  const tracing = await startTracing();

  let embedded: EmbeddedServer | undefined;
  let databaseUrl = config.database.url;
  if (!databaseUrl) {
    embedded = await startEmbeddedPostgres({ dir: config.database.embedded_dir, port: config.database.embedded_port });
    databaseUrl = await ensureDatabase(embedded.adminUrl, 'tenantry');
  }

  let app: App | undefined;
  let listening: string | undefined;
  let url: string | undefined;
  try {
    const building = buildApp({ config, modules, databaseUrl, role, logger: log });
    // Left behind when a signal abandons the start: its failure (the connections going) is no news.
    building.catch(() => {});
    app = await Promise.race([building, interrupted]);
    if (app.services.mailer.mode === 'memory') {
      log.warn('mail.host is not set: mail goes to an in-memory mailbox and is not delivered');
    }
    if (app.web) {
      listening = await Promise.race([
        app.web.listen({ host: config.server.host, port: config.server.port }),
        interrupted,
      ]);
      // The bound address (127.0.0.1) names no tenant: a person opens the operator's host.
      url = operatorUrl(config.server.public_host, (app.web.server.address() as AddressInfo).port);
    }
  } catch (err) {
    if (err instanceof StartInterrupted) {
      log.info({ signal: err.signal }, 'stopped while starting');
      await embedded?.stop();
      process.exit(0);
    }
    await app?.close().catch(() => {});
    await embedded?.stop();
    throw err;
  }
  const running = app;
  // The newcomer's next step, best effort: a database hiccup here must not stop a started service.
  const next =
    app.web && (await operatorHasNoUser(app.services).catch(() => false)) ? FIRST_ADMINISTRATOR_COMMAND : undefined;
  log.info(
    {
      role,
      node: process.version,
      url,
      listening,
      publicHost: config.server.public_host,
      database: embedded
        ? `embedded PostgreSQL in ${config.database.embedded_dir} (port ${embedded.port})`
        : redactUrl(databaseUrl),
      mail: app.services.mailer.mode === 'smtp' ? `smtp ${config.mail.host}:${config.mail.port}` : 'in-memory mailbox',
      ...(app.metricsUrl ? { metrics: `${app.metricsUrl}/metrics` } : {}),
      ...(tracing
        ? {
            traces:
              process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
              process.env.OTEL_EXPORTER_OTLP_ENDPOINT ??
              process.env.OTEL_TRACES_EXPORTER,
          }
        : {}),
      ...(next ? { next } : {}),
    },
    'tenantry started',
  );
  if (next) log.info({ next }, `the operator tenant has no user yet; to become its administrator, run: ${next}`);

  let stopping = false;
  onStop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    void shutdown(signal);
  };
  const shutdown = async (signal: string) => {
    // Ctrl-C reaches the embedded PostgreSQL too, which then drops every connection while we stop.
    // A library may surface such a drop as an unheard 'error' event; while stopping it changes
    // nothing, so it must not turn a clean stop into a crash. Anything else still ends the process.
    process.on('uncaughtException', (err: Error & { code?: unknown }) => {
      if (typeof err.code === 'string' && DROPPED_CONNECTION.has(err.code)) return;
      log.fatal({ err }, 'uncaught exception while stopping');
      process.exit(1);
    });
    log.info({ signal }, 'shutting down: no new requests, finishing in-flight ones');
    const force = setTimeout(() => process.exit(1), 30_000).unref();
    try {
      await running.close();
      await embedded?.stop();
      await stopTracing().catch(() => {});
      clearTimeout(force);
      log.info('stopped');
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  if (requested) onStop(requested);
}

/**
 * The service's command line (--role web|worker|all, --config), over the installation's modules:
 * the repository's main.ts calls it with modules/index.ts's list. The framework itself names no
 * module (docs/architecture.md, "Import rules").
 */
export function runService(modules: readonly ModuleDefinition[]): void {
  main(modules).catch((err: Error & { code?: unknown }) => {
    process.stderr.write(`${startFailureLine(err)}\n`);
    process.exit(1);
  });
}
