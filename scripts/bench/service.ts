import pino from 'pino';
import { Session } from 'node:inspector/promises';
import { writeFile } from 'node:fs/promises';
import type { FastifyBaseLogger } from 'fastify';
import { validateConfig } from '../../framework/config/load.ts';
import { buildApp, type App, type Role } from '../../framework/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { allModules } from '../../modules/index.ts';
import { testkitModule } from '../../test/helpers/testkit-module.ts';
import type { ModuleDefinition } from '../../framework/entity/module-definition.ts';
import { benchModule, ProbeRecorder, PROBE_EVENT, wallClockMs } from './bench-module.ts';
import { seed } from './seed.ts';
import { countLiveBatches, liveSessions, liveTenants } from './live-service.ts';
import {
  SETTINGS_ENV,
  type ChildMessage,
  type ChildRequest,
  type LiveStats,
  type ProbeSamples,
  type ServiceSettings,
} from './protocol.ts';

/**
 * The service under test, in its own process: role `all` (web and worker) with the installation's
 * modules, the test kit's widget entity and the benchmark probe module. It seeds its data, listens
 * on a free port and answers the run over IPC. TENANTRY_BENCH_ROLE=web starts a web process alone
 * (the live scenario's: its RSS bound is a web process's).
 */
const settings = JSON.parse(process.env[SETTINGS_ENV] ?? '{}') as ServiceSettings;
const role: Role = process.env.TENANTRY_BENCH_ROLE === 'web' ? 'web' : 'all';

/**
 * The history-cost scenario's other side (scripts/bench/history-cost.ts): with
 * TENANTRY_BENCH_HISTORY=off the test kit's widget keeps no history, all else equal.
 */
function historySwitched(module: ModuleDefinition): ModuleDefinition {
  if (process.env.TENANTRY_BENCH_HISTORY !== 'off') return module;
  return {
    ...module,
    entities: (module.entities ?? []).map((e) =>
      (e as { name?: string }).name === 'widget' ? ({ ...e, history: false } as typeof e) : e,
    ),
  };
}
const send = (message: ChildMessage) => process.send?.(message);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits until the worker has relayed and handled everything earlier scenarios published, and any
 * job due meanwhile (the schedules' own, such as a per-minute sweep) has run. Resolves to when the
 * events were done: no outbox row unrelayed (so none unaudited: the relay records the audit trail
 * in its own transaction) and no subscription job pending, the backlog a run leaves behind.
 */
async function drained(app: App, timeoutMs: number): Promise<{ eventsMs: number }> {
  const started = Date.now();
  const deadline = started + timeoutMs;
  let eventsMs: number | undefined;
  while (Date.now() < deadline) {
    const { rows } = await app.services.db.pool.query<{ events: number; scheduled: number }>(
      `select (select count(*) from outbox where relayed_at is null)
            + (select count(*) from pgboss.job where state in ('created', 'retry', 'active') and start_after <= now() and name like 'sub-%') as events,
              (select count(*) from pgboss.job where state in ('created', 'retry', 'active') and start_after <= now() and name not like 'sub-%') as scheduled`,
    );
    if (Number(rows[0]!.events) === 0) eventsMs ??= Date.now() - started;
    if (eventsMs !== undefined && Number(rows[0]!.scheduled) === 0) return { eventsMs };
    await sleep(100);
  }
  throw new Error(`the worker did not drain earlier events within ${timeoutMs / 1000} s`);
}

async function publishProbes(
  app: App,
  tenant: TenantRef,
  recorder: ProbeRecorder,
  count: number,
  rate: number,
): Promise<ProbeSamples> {
  await drained(app, 120_000);
  recorder.clear();
  const committedAt: number[] = new Array(count);
  const pending: Promise<void>[] = [];
  const start = wallClockMs();
  for (let seq = 0; seq < count; seq++) {
    // Open loop: each probe leaves at its scheduled time whether or not earlier ones have arrived.
    const wait = start + (seq * 1000) / rate - wallClockMs();
    if (wait > 0.5) await sleep(wait);
    pending.push(
      app.services.transactions
        .run(tenant, async (ctx) => {
          ctx.publish(PROBE_EVENT, { seq });
        })
        .then(() => {
          committedAt[seq] = wallClockMs();
        }),
    );
  }
  await Promise.all(pending);
  await recorder.waitFor(count, 30_000);
  const fromCommitMs: number[] = [];
  const fromOccurredMs: number[] = [];
  for (let seq = 0; seq < count; seq++) {
    const arrived = recorder.arrivedAt.get(seq);
    if (arrived === undefined) continue;
    fromCommitMs.push(arrived - committedAt[seq]!);
    fromOccurredMs.push(arrived - recorder.occurredAt.get(seq)!);
  }
  return { fromCommitMs, fromOccurredMs, missing: count - fromCommitMs.length };
}

async function main(): Promise<void> {
  const config = validateConfig(
    {
      server: { host: '127.0.0.1', port: 0, public_host: 'localhost', log_level: 'warn' },
      database: { url: settings.databaseUrl, pool_size: settings.poolSize },
      files: { dir: settings.filesDir, max_bytes: settings.maxUploadBytes, quota_bytes: Number.MAX_SAFE_INTEGER },
      // The webhooks scenario's deliveries (to a loopback receiver) are worked by this worker too: same database.
      webhooks: { allow_private_networks: true, allow_http: true },
      // The live scenario with another pacing of a busy tenant's batches (0: none), to compare.
      ...(process.env.TENANTRY_BENCH_LIVE_BATCH_INTERVAL_MS
        ? { live: { batch_interval_ms: Number(process.env.TENANTRY_BENCH_LIVE_BATCH_INTERVAL_MS) } }
        : {}),
    },
    'benchmark settings',
    // The Prometheus listener, to measure the request path with metrics on (docs/observability.md),
    // the prepared statements' mode, to measure what unnamed statements cost (prepared-statements.ts),
    // and the relay's commit wait (0: a pass per commit), to compare its cost in the live scenario.
    {
      TENANTRY_METRICS_PORT: process.env.TENANTRY_METRICS_PORT,
      TENANTRY_DATABASE_PREPARED_STATEMENTS: process.env.TENANTRY_DATABASE_PREPARED_STATEMENTS,
      TENANTRY_WORKER_RELAY_COMMIT_WAIT_MS: process.env.TENANTRY_WORKER_RELAY_COMMIT_WAIT_MS,
    },
  );
  const logger = pino({ level: config.server.log_level }) as FastifyBaseLogger;
  const recorder = new ProbeRecorder();
  const app = await buildApp({
    config,
    modules: [...allModules, historySwitched(testkitModule), benchModule(recorder)],
    databaseUrl: settings.databaseUrl,
    role,
    logger,
  });
  // The live scenario's web process only serves (TENANTRY_BENCH_SEED=off): the run's service seeds
  // its tenants, as a web process in production serves tenants made elsewhere.
  const seeded = process.env.TENANTRY_BENCH_SEED === 'off' ? undefined : await seed(app.services, settings);
  const firstTenant = (): TenantRef => {
    if (!seeded) throw new Error('this process seeded nothing');
    return { id: seeded.tenants[0]!.id, slug: seeded.tenants[0]!.slug, isOperator: false };
  };
  await app.web!.listen({ host: '127.0.0.1', port: 0 });
  const address = app.web!.server.address();
  if (typeof address !== 'object' || !address) throw new Error('the service has no address');

  let liveStats: LiveStats | undefined;
  let profiler: Session | undefined;
  process.on('message', (message: ChildRequest) => {
    if (message.type === 'probe') {
      Promise.resolve()
        .then(() => publishProbes(app, firstTenant(), recorder, message.count, message.rate))
        .then(
          (samples) => send({ type: 'probe-result', samples }),
          (err: Error) => send({ type: 'failed', error: err.stack ?? err.message }),
        );
    } else if (message.type === 'drain') {
      const started = Date.now();
      drained(app, 120_000).then(
        ({ eventsMs }) => send({ type: 'drained', ms: Date.now() - started, eventsMs }),
        (err: Error) => send({ type: 'failed', error: err.stack ?? err.message }),
      );
    } else if (message.type === 'live-sessions') {
      Promise.resolve()
        .then(() => liveSessions(app, firstTenant(), seeded!.userId, message.count))
        .then(
          (cookies) => send({ type: 'live-sessions', cookies }),
          (err: Error) => send({ type: 'failed', error: err.stack ?? err.message }),
        );
    } else if (message.type === 'live-tenants') {
      liveTenants(app, settings.runId, message.count, message.sessions).then(
        (tenants) => send({ type: 'live-tenants', tenants }),
        (err: Error) => send({ type: 'failed', error: err.stack ?? err.message }),
      );
    } else if (message.type === 'live-stats') {
      // Counting starts with the first ask (the live scenario's), so no other scenario pays for it.
      liveStats ??= countLiveBatches(app.services.db.pool);
      send({ type: 'live-stats', stats: { ...liveStats, memory: process.memoryUsage() } });
    } else if (message.type === 'live-profile') {
      // A window of the live scenario profiled alone (TENANTRY_BENCH_LIVE_PROFILE): --cpu-prof takes the whole run.
      const failed = (err: Error) => send({ type: 'failed', error: err.stack ?? err.message });
      if (message.write === undefined) {
        profiler ??= new Session();
        profiler.connect();
        profiler
          .post('Profiler.enable')
          .then(() => profiler!.post('Profiler.start'))
          .then(() => send({ type: 'live-profile' }), failed);
      } else {
        const path = message.write;
        profiler!
          .post('Profiler.stop')
          .then(({ profile }) => writeFile(path, JSON.stringify(profile)))
          .then(() => {
            profiler!.disconnect();
            send({ type: 'live-profile' });
          }, failed);
      }
    } else if (message.type === 'stop') {
      // A clean exit lets --cpu-prof write its profile.
      void app.close().finally(() => process.exit(0));
    }
  });
  send({ type: 'ready', port: address.port, ...(seeded ? { seed: seeded } : {}) });
}

main().catch((err: Error) => {
  send({ type: 'failed', error: err.stack ?? err.message });
  process.exit(1);
});
