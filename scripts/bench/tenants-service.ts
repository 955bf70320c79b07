import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { validateConfig } from '../../framework/config/load.ts';
import { buildApp, type App } from '../../framework/app.ts';
import { sessionCookie } from '../../framework/access/session-cookie.ts';
import { tenantJobQueue } from '../../framework/events/jobs.ts';
import { allModules } from '../../modules/index.ts';
import { SETTINGS_ENV } from './protocol.ts';
import type { TenantsServiceSettings, TenantsRequest, TenantsMessage } from './tenants-protocol.ts';

/**
 * A process of the tenants scenario: a web process (role web, no worker) or a worker (role worker,
 * no schedule: the run asks for each fan-out). It answers the run over IPC: `ready` once it
 * listens (web) or works (worker), with the milliseconds since the process started, and, for a
 * worker, one fan-out at a time with its duration and the worker's peak RSS.
 */
const settings = JSON.parse(process.env[SETTINGS_ENV] ?? '{}') as TenantsServiceSettings;
const send = (message: TenantsMessage) => process.send?.(message);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs a job as the schedule's tick would (a per-tenant job fanned out into one queued run per tenant) until no run is left. */
async function runJob(
  app: App,
  name: string,
  slot: string,
): Promise<{ ms: number; rssPeakMiB: number; runs: number; failed: number }> {
  const worker = app.worker!;
  const job = worker.jobs.find(name);
  let rssPeak = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
  }, 100);
  const started = performance.now();
  try {
    if (!job.perTenant) {
      await worker.jobs.run(job, null, slot);
      return { ms: performance.now() - started, rssPeakMiB: rssPeak / 2 ** 20, runs: 1, failed: 0 };
    }
    // A fan-out of its own (a fresh id): the runs it queued, one per served tenant, whatever ran
    // before under the slot; the scenario checks their number against the served tenants.
    const ids = await worker.fanOut(job, slot);
    const queue = tenantJobQueue(name);
    // Polled by state alone: the queue holds no other open run (the run asks for one fan-out at a
    // time, and the worker schedules none). Matching the 10,000 ids on every poll was the bench's
    // own load (ten thousand index probes and a 370 kB parameter every 100 ms) beside the list
    // whose p99 the fan-out is measured against. A poll every 250 ms bounds the figure's error to
    // a quarter of a second.
    for (;;) {
      const { rows } = await app.services.db.pool.query<{ open: string }>(
        `select count(*) as open from pgboss.job where name = $1 and state in ('created', 'retry', 'active')`,
        [queue],
      );
      if (Number(rows[0]!.open) === 0) break;
      await sleep(250);
    }
    const ms = performance.now() - started;
    const { rows } = await app.services.db.pool.query<{ failed: string }>(
      `select count(*) filter (where state = 'failed') as failed from pgboss.job where name = $1 and id = any($2::uuid[])`,
      [queue, ids],
    );
    return { ms, rssPeakMiB: rssPeak / 2 ** 20, runs: ids.length, failed: Number(rows[0]!.failed) };
  } finally {
    clearInterval(sampler);
  }
}

async function main(): Promise<void> {
  const config = validateConfig(
    {
      server: { host: '127.0.0.1', port: 0, public_host: 'localhost', log_level: 'warn' },
      database: { url: settings.databaseUrl, pool_size: settings.poolSize },
    },
    'benchmark settings',
  );
  const logger = pino({ level: config.server.log_level }) as FastifyBaseLogger;
  const app = await buildApp({
    config,
    modules: allModules,
    databaseUrl: settings.databaseUrl,
    role: settings.role,
    logger,
    scheduleJobs: false,
  });
  let port = 0;
  if (app.web) {
    await app.web.listen({ host: '127.0.0.1', port: 0 });
    const address = app.web.server.address();
    if (typeof address !== 'object' || !address) throw new Error('the web process has no address');
    port = address.port;
  }
  process.on('message', (message: TenantsRequest) => {
    if (message.type === 'run-job') {
      runJob(app, message.job, message.slot).then(
        (result) => send({ type: 'job-done', ...result }),
        (err: Error) => send({ type: 'failed', error: err.stack ?? err.message }),
      );
    } else if (message.type === 'cache-size') {
      send({ type: 'cache-size', size: app.services.hosts.size });
    } else if (message.type === 'stop') {
      void app.close().finally(() => process.exit(0));
    }
  });
  send({
    type: 'ready',
    port,
    startupMs: performance.now(),
    cookieName: sessionCookie(config).name,
    rssMiB: process.memoryUsage().rss / 2 ** 20,
  });
}

main().catch((err: Error) => {
  send({ type: 'failed', error: err.stack ?? err.message });
  process.exit(1);
});
