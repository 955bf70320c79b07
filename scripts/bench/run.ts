import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { parseOptions, type BenchOptions } from './options.ts';
import { openBenchDatabase, type BenchDatabase } from './database.ts';
import { startServer, type ServerProcess } from './child.ts';
import { startNodeOptions } from '../start-options.ts';
import { measurePair, type Pair, type Plan } from './throughput.ts';
import {
  measureFailedLogins,
  measureHash,
  measureLoginThroughput,
  measureRefusals,
  REFUSALS,
  signIn,
  timing,
  wrongPasswordAccountsFor,
} from './login.ts';
import { measureTail } from './tail.ts';
import { growWidgets } from './grow.ts';
import { explainList, type ListPlan } from './explain.ts';
import { send } from './http.ts';
import { measureUpload, type UploadFigures } from './upload.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatTable, rounded, type ResultRow } from './report.ts';
import type { BaselineSettings, ServiceSettings } from './protocol.ts';
import { BENCH_PASSWORD, type SeedInfo } from './seed.ts';
import { BASELINE_PAGE_ETAG } from './baseline-page.ts';
import { measureDriverGroup } from './drivers.ts';
import { measureS3UploadGroup } from './s3-upload.ts';
import { measureWebhookGroup } from './webhooks.ts';
import { measureTenantsGroup } from './tenants.ts';
import { measureMetricsCostGroup } from './metrics-cost.ts';
import { measurePlanCostGroup } from './plan-cost.ts';
import { measureHistoryCostGroup } from './history-cost.ts';
import { measureBatchGroup } from './batch.ts';
import { measureLiveGroup } from './live.ts';
import { measureFilteredListGroup } from './list-filtered.ts';
import { measurePreparedStatementsGroup } from './prepared-statements.ts';
import { planOf } from './two-services.ts';
import { subscribeBenchTenant } from './plan.ts';

const LIST_PATH = '/api/v1/testkit/widgets?limit=20';
const NOTIFICATIONS_PATH = '/api/v1/notification/notifications?limit=20';
const CREATE_PATH = '/api/v1/testkit/widgets';
const CREATE_BODY = '{"name":"bench-[<id>]","size":7,"color":"blue","note":"created by the benchmark"}';

const log = (line: string) => process.stdout.write(`${line}\n`);
const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2), process.env);
  const startedAt = performance.now();
  log(
    `tenantry bench${options.quick ? ' (quick)' : ''}: ${cpus().length} cores, node ${process.version}, load average ${load()}`,
  );
  const runId = randomBytes(3).toString('hex');
  const db = await openBenchDatabase(options.databaseUrl, { statements: options.liveStatements });
  const servers: ServerProcess[] = [];
  try {
    log(
      `database: ${db.description}; ${Object.entries(db.settings)
        .map(([k, v]) => `${k}=${v}`)
        .join(', ')}`,
    );
    const rows = await measure(options, db, runId, servers);
    log('');
    log(formatTable(rows));
    writeFileSync(options.out, `${JSON.stringify(rows.map(rounded), null, 2)}\n`);
    log(`\nwrote ${options.out}; load average now ${load()}; ${((performance.now() - startedAt) / 1000).toFixed(0)} s`);
  } finally {
    await Promise.allSettled(servers.map((s) => s.stop()));
    await db.stop();
  }
}

async function measure(
  options: BenchOptions,
  db: BenchDatabase,
  runId: string,
  servers: ServerProcess[],
): Promise<ResultRow[]> {
  const filesDir = mkdtempSync(join(tmpdir(), 'tenantry-bench-files-'));
  process.once('exit', () => rmSync(filesDir, { recursive: true, force: true }));
  const settings: ServiceSettings = {
    databaseUrl: db.url,
    poolSize: options.poolSize,
    runId,
    rowsPerTenant: options.rowsPerTenant,
    notifications: options.notifications,
    wrongPasswordAccounts: wrongPasswordAccountsFor(options.loginSamples),
    filesDir: join(filesDir, 'service'),
    maxUploadBytes: options.uploadMib * 1024 * 1024,
  };
  const profileInto = (dir: string) => (options.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : []);
  // Each service process starts with the Node options of its role's start script (scripts/start-options.ts).
  const service = await startServer('service', './service.ts', settings, [
    ...startNodeOptions('start'),
    ...profileInto(options.cpuProfDir),
  ]);
  servers.push(service);
  const seed = service.ready.seed as SeedInfo;
  const host = seed.tenants[0]!.host;
  if (options.plan) {
    await subscribeBenchTenant(db.url, seed.tenants[0]!.id, ['webhook.endpoints', 'file.public_links']);
    log('the bench tenant is on a plan with every feature and a bound on every limit (--plan)');
  }
  log(
    `service (role all, pool ${options.poolSize}) on port ${service.port}; seeded 2 tenants × ${options.rowsPerTenant} widgets, ${options.notifications} notifications for the bench user`,
  );

  const rows: ResultRow[] = [];
  const httpGroups = [
    'list',
    'create',
    'health',
    'public',
    'notifications',
    'open-loop',
    'list-size',
    'list-filtered',
  ] as const;
  const wantsHttp = httpGroups.some((group) => options.only.has(group));
  const baselineSettings: BaselineSettings = {
    databaseUrl: db.url,
    poolSize: options.poolSize,
    tenantIds: seed.tenants.map((t) => t.id),
    rowsPerTenant: options.rowsPerTenant,
    recipientId: seed.userId,
    filesDir: join(filesDir, 'baseline'),
  };
  // One baseline process serves every scenario that compares with it (it creates its table at start).
  let baselineProcess: ServerProcess | undefined;
  const startBaseline = async () => {
    if (!baselineProcess) {
      baselineProcess = await startServer(
        'baseline',
        './baseline.ts',
        baselineSettings,
        profileInto(join(options.cpuProfDir, 'baseline')),
      );
      servers.push(baselineProcess);
    }
    return baselineProcess;
  };
  if (wantsHttp) {
    const baseline = await startBaseline();
    const cookie = await signIn(service.port, host, seed.email, BENCH_PASSWORD);
    log(`signed in through POST /api/v1/auth/login; baseline on port ${baseline.port}`);
    await checkSameAnswer(service.port, baseline.port, host, cookie);

    const plan: Plan = { ...planOf(options, log), ...(db.postmasterPid ? { postmasterPid: db.postmasterPid } : {}) };
    const at = (port: number) => `http://127.0.0.1:${port}`;
    const pids = { service: service.pid, baseline: baseline.pid };
    const settle = async () => {
      const { ms, eventsMs } = await service.ask({ type: 'drain' }, 'drained', 150_000);
      return { ms, eventsMs };
    };
    const pairs: (Pair & {
      group: (typeof httpGroups)[number];
      target: (ratio: number, p99: number) => { text: string; met: boolean } | undefined;
    })[] = [
      {
        group: 'list',
        name: 'list',
        pids,
        settle,
        service: { url: at(service.port) + LIST_PATH, method: 'GET', headers: { host, cookie } },
        baseline: { url: at(baseline.port) + LIST_PATH, method: 'GET' },
        target: (ratio) => ({ text: '≥ 0.8× baseline', met: ratio >= 0.8 }),
      },
      {
        group: 'create',
        name: 'create',
        pids,
        settle,
        service: {
          url: at(service.port) + CREATE_PATH,
          method: 'POST',
          headers: { host, cookie, 'content-type': 'application/json' },
          body: CREATE_BODY,
        },
        baseline: {
          url: at(baseline.port) + CREATE_PATH,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: CREATE_BODY,
        },
        target: (ratio) => ({ text: '≥ 0.6× baseline insert', met: ratio >= 0.6 }),
      },
      {
        // The owner-scoped list: the signed-in user's own notifications, newest first.
        group: 'notifications',
        name: 'notifications',
        pids,
        settle,
        service: { url: at(service.port) + NOTIFICATIONS_PATH, method: 'GET', headers: { host, cookie } },
        baseline: { url: at(baseline.port) + NOTIFICATIONS_PATH, method: 'GET' },
        target: () => undefined,
      },
      {
        // The public content page answered 304 (If-None-Match names its ETag), beside the bare static 304.
        group: 'public',
        name: 'public-304',
        pids,
        settle,
        service: {
          url: at(service.port) + seed.page.path,
          method: 'GET',
          headers: { host, 'if-none-match': seed.page.etag },
          expectStatus: 304,
        },
        baseline: {
          url: at(baseline.port) + seed.page.path,
          method: 'GET',
          headers: { 'if-none-match': BASELINE_PAGE_ETAG },
          expectStatus: 304,
        },
        target: (ratio) => ({ text: '≥ 0.7× baseline', met: ratio >= 0.7 }),
      },
      {
        group: 'health',
        name: 'health',
        pids,
        settle,
        service: { url: `${at(service.port)}/health`, method: 'GET' },
        baseline: { url: `${at(baseline.port)}/health`, method: 'GET' },
        target: () => undefined,
      },
    ];
    const measured = new Map<string, Awaited<ReturnType<typeof measurePair>>>();
    for (const pair of pairs.filter((p) => options.only.has(p.group))) {
      log(
        `${pair.name}: ${options.connections} connections, warm-up ${options.warmupSeconds} s, ${options.rounds} × ${options.seconds} s each side (load average ${load()})`,
      );
      const figures = await measurePair(pair, plan);
      measured.set(pair.name, figures);
      const ratio = figures.service.rps / figures.baseline.rps;
      const target = pair.target(ratio, figures.service.p99_ms);
      const size = pair.group === 'list' ? { table_rows: options.rowsPerTenant } : {};
      rows.push({
        name: pair.name,
        ...pick(figures.service),
        ratio_to_baseline: ratio,
        ...size,
        ...(target ? { target: target.text, met: target.met } : {}),
      });
      rows.push({ name: `${pair.name}-baseline`, ...pick(figures.baseline), ratio_to_baseline: 1, ...size });
      if (pair.group === 'create') {
        // Each create run's events are relayed and audited in the relay's transactions: the
        // slowest catch-up after a run, once its load stopped.
        const drainMs = Math.max(...figures.serviceEventsMs);
        log(`  audit drained ${figures.serviceEventsMs.map((ms) => `${ms} ms`).join(', ')} after the create runs`);
        rows.push({
          name: 'audit-drain',
          rps: null,
          p50_ms: null,
          p99_ms: null,
          ratio_to_baseline: null,
          audit_drain_ms: drainMs,
          target: `≤ 2000 ms after a ${options.seconds} s create run`,
          met: drainMs <= 2000,
        });
      }
    }

    if (options.only.has('list-filtered')) {
      log(
        `list-filtered: seeding ${options.tasks} tasks for the filtered, sorted, expanded task list (load average ${load()})`,
      );
      rows.push(
        ...(await measureFilteredListGroup({
          databaseUrl: db.url,
          runId,
          tenant: { id: seed.tenants[0]!.id, host },
          password: BENCH_PASSWORD,
          tasks: options.tasks,
          servicePort: service.port,
          baselinePort: baseline.port,
          pids,
          settle,
          plan,
          log,
        })),
      );
    }

    const listPair = pairs.find((p) => p.group === 'list')!;
    if (options.only.has('open-loop')) {
      // Half the bare baseline's closed-loop peak, from this run's list if it ran, else measured now.
      const peak =
        measured.get('list')?.baseline.rps ?? (await measurePair({ ...listPair }, { ...plan, rounds: 1 })).baseline.rps;
      const rate = Math.max(1, Math.round(peak / 2));
      log(
        `list-open-loop: ${rate} req/s (half the baseline's ${peak.toFixed(0)} req/s), ${options.openLoopSeconds} s each side in ${options.rounds} round(s) (load average ${load()})`,
      );
      rows.push(
        ...(await measureTail({
          name: 'list-open-loop',
          service: listPair.service,
          baseline: listPair.baseline,
          rate,
          seconds: options.openLoopSeconds,
          rounds: options.rounds,
          settle,
          log,
        })),
      );
    }

    if (options.only.has('list-size') && options.rows.length > 1) {
      const first = measured.get('list') ?? (await measurePair(listPair, plan));
      const describe = (size: number, p: ListPlan) =>
        log(
          `  EXPLAIN (ANALYZE, BUFFERS) of the list at ${size} rows: ${p.executionMs.toFixed(2)} ms, ${p.sharedHit + p.sharedRead} buffers (${p.sharedRead} read)\n${p.text.replace(/^/gm, '    ')}`,
        );
      let size = options.rowsPerTenant;
      describe(size, await explainList(db.url, seed.tenants[0]!.id));
      for (const next of options.rows.slice(1)) {
        log(
          `list-size: growing the first tenant's widgets from ${size} to ${next} (service and baseline tables; load average ${load()})`,
        );
        log(
          `  grown and vacuum-analysed in ${(await growWidgets(db.url, seed.tenants[0]!.id, size, next)).toFixed(1)} s`,
        );
        size = next;
        describe(size, await explainList(db.url, seed.tenants[0]!.id));
        await checkSameAnswer(service.port, baseline.port, host, cookie);
        const figures = await measurePair({ ...listPair, name: `list-${size}-rows` }, plan);
        const flat = figures.service.p50_ms / first.service.p50_ms;
        rows.push({
          name: `list-${size}-rows`,
          ...pick(figures.service),
          ratio_to_baseline: figures.service.rps / figures.baseline.rps,
          table_rows: size,
        });
        rows.push({
          name: `list-${size}-rows-baseline`,
          ...pick(figures.baseline),
          ratio_to_baseline: 1,
          table_rows: size,
        });
        rows.push({
          name: `list-p50-${size}-vs-${options.rowsPerTenant}`,
          rps: null,
          p50_ms: figures.service.p50_ms,
          p99_ms: null,
          ratio_to_baseline: flat,
          baseline: `list p50 at ${options.rowsPerTenant} rows`,
          target: `p50 at ${size} rows ≤ 1.3× p50 at ${options.rowsPerTenant}`,
          met: flat <= 1.3,
        });
      }
    }
  }

  if (options.only.has('live')) {
    // The streams' RSS bound is a web process's: they are measured on a service of role web of
    // its own that only serves, as one in production does (the run's service is `all`: its
    // worker, every module's jobs and what earlier scenarios left in its memory). The run's
    // service seeded the tenants and makes the sessions; its worker relays the creates' events.
    const web = await startServer(
      'service-live-web',
      './service.ts',
      { ...settings, runId: `${runId}lw`, filesDir: join(filesDir, 'live-web') },
      [...startNodeOptions('start:web'), ...profileInto(join(options.cpuProfDir, 'live-web'))],
      { TENANTRY_BENCH_ROLE: 'web', TENANTRY_BENCH_SEED: 'off' },
    );
    servers.push(web);
    const webHost = host;
    const cookie = await signIn(web.port, webHost, seed.email, BENCH_PASSWORD);
    log(
      `live: ${options.liveStreams.join(', ')} open streams of the widget list on one tenant, then ${options.liveTenants * 10} more over ${options.liveTenants} tenants, on a web process (role web, port ${web.port}), ${options.liveRate} creates/s for ${options.seconds} s at each (load average ${load()})`,
    );
    rows.push(
      ...(await measureLiveGroup({
        service: web,
        seeder: service,
        host: webHost,
        cookie,
        counts: options.liveStreams,
        tenants: options.liveTenants,
        rate: options.liveRate,
        readersNice: options.liveReadersNice,
        rounds: options.rounds,
        postmasterPid: db.postmasterPid,
        ...(options.liveStatements ? { statementsUrl: db.url } : {}),
        seconds: options.seconds,
        log,
      })),
    );
    await web.stop();
  }

  if (options.only.has('batch')) {
    const cookie = await signIn(service.port, host, seed.email, BENCH_PASSWORD);
    log(`batch: 100 creates in one POST /api/v1/batch beside 100 single creates (load average ${load()})`);
    rows.push(...(await measureBatchGroup({ port: service.port, host, cookie, rounds: options.rounds, log })));
  }

  // Before the uploads: their gigabytes, written back to disk afterwards, would slow the WAL
  // flushes this measures.
  if (options.only.has('outbox')) {
    log(
      `outbox: ${options.outboxEvents} events at ${options.outboxRate}/s, commit → subscription handler start (load average ${load()})`,
    );
    await service.ask({ type: 'probe', count: 100, rate: options.outboxRate }, 'probe-result', 60_000);
    const { samples } = await service.ask(
      { type: 'probe', count: options.outboxEvents, rate: options.outboxRate },
      'probe-result',
      120_000,
    );
    if (samples.missing > 0)
      throw new Error(
        `outbox: ${samples.missing} of ${options.outboxEvents} events never reached the handler within 30 s`,
      );
    const fromCommit = timing(samples.fromCommitMs);
    const fromOccurred = timing(samples.fromOccurredMs);
    log(
      `  from the transaction's start (occurred_at): p50 ${fromOccurred.p50_ms.toFixed(2)} ms, p99 ${fromOccurred.p99_ms.toFixed(2)} ms`,
    );
    rows.push({
      name: 'outbox-latency',
      rps: null,
      p50_ms: fromCommit.p50_ms,
      p99_ms: fromCommit.p99_ms,
      ratio_to_baseline: null,
      target: 'p99 ≤ 50 ms',
      met: fromCommit.p99_ms <= 50,
      samples: fromCommit.samples,
    });
  }

  if (options.only.has('upload')) {
    const baseline = await startBaseline();
    const cookie = await signIn(service.port, host, seed.email, BENCH_PASSWORD);
    log(
      `upload: ${options.uploadMib} MiB per upload, ${options.rounds} round(s) each side, alternating (load average ${load()})`,
    );
    const service_: UploadFigures[] = [];
    const baseline_: UploadFigures[] = [];
    for (let round = 0; round < options.rounds; round++) {
      service_.push(
        await measureUpload(
          service.port,
          '/api/v1/file/files?visibility=private',
          { host, cookie },
          options.uploadMib,
          service.pid,
        ),
      );
      baseline_.push(
        await measureUpload(baseline.port, '/upload', { host: 'baseline' }, options.uploadMib, baseline.pid),
      );
      log(
        `  round ${round + 1}: service ${service_.at(-1)!.mbPerSecond.toFixed(0)} MB/s, baseline ${baseline_.at(-1)!.mbPerSecond.toFixed(0)} MB/s`,
      );
    }
    const best = (figures: UploadFigures[]) => Math.max(...figures.map((f) => f.mbPerSecond));
    const growths = service_.map((f) => f.rssGrowth).filter((g): g is number => g !== null);
    const growthMib = growths.length > 0 ? Math.max(...growths) / (1024 * 1024) : undefined;
    const ratio = best(service_) / best(baseline_);
    const rssMet = growthMib === undefined ? false : growthMib < 64;
    const baselineGrowths = baseline_.map((f) => f.rssGrowth).filter((g): g is number => g !== null);
    const baselineGrowthMib = baselineGrowths.length > 0 ? Math.max(...baselineGrowths) / (1024 * 1024) : undefined;
    log(
      `  RSS growth during one upload: service ${growthMib === undefined ? 'unknown (no /proc)' : `${growthMib.toFixed(1)} MiB`}, baseline ${baselineGrowthMib === undefined ? 'unknown' : `${baselineGrowthMib.toFixed(1)} MiB`}`,
    );
    rows.push({
      name: `upload-${options.uploadMib}MiB`,
      rps: null,
      p50_ms: null,
      p99_ms: null,
      ratio_to_baseline: ratio,
      mb_per_s: best(service_),
      ...(growthMib !== undefined ? { rss_growth_mib: growthMib } : {}),
      target: `≥ 0.8× baseline MB/s, RSS growth < 64 MiB${options.uploadMib === 1024 ? '' : ' (target set for 1024 MiB)'}`,
      met: ratio >= 0.8 && rssMet,
    });
    rows.push({
      name: 'upload-baseline',
      rps: null,
      p50_ms: null,
      p99_ms: null,
      ratio_to_baseline: 1,
      mb_per_s: best(baseline_),
      ...(baselineGrowthMib !== undefined ? { rss_growth_mib: baselineGrowthMib } : {}),
    });
  }

  if (options.only.has('upload-s3')) rows.push(...(await measureS3UploadGroup(options, db.url, runId, log, load)));
  if (options.only.has('webhooks')) rows.push(...(await measureWebhookGroup(options, db.url, runId, log, load)));
  if (options.only.has('tenants')) rows.push(...(await measureTenantsGroup(options, db.url, runId, log, load)));
  if (options.only.has('metrics-cost'))
    rows.push(...(await measureMetricsCostGroup(options, db.url, runId, log, load)));
  if (options.only.has('plan-cost')) rows.push(...(await measurePlanCostGroup(options, db.url, runId, log, load)));
  if (options.only.has('history')) rows.push(...(await measureHistoryCostGroup(options, db.url, runId, log, load)));
  if (options.only.has('prepared-statements'))
    rows.push(...(await measurePreparedStatementsGroup(options, db.url, runId, log, load)));

  if (options.only.has('drivers')) {
    const cookie = await signIn(service.port, host, seed.email, BENCH_PASSWORD);
    rows.push(...(await measureDriverGroup(options, db, seed, cookie, log, load)));
  }

  if (options.only.has('login')) {
    log(
      `login: argon2id hash × ${options.hashSamples}; failed logins × ${options.loginSamples} each kind, alternating (load average ${load()})`,
    );
    const hash = await measureHash(options.hashSamples);
    const failed = await measureFailedLogins(service.port, host, seed.wrongPasswordEmails, options.loginSamples);
    const ratio = failed.unknownAddress.p50_ms / failed.wrongPassword.p50_ms;
    log(
      `  means: wrong password ${failed.wrongPassword.mean_ms.toFixed(1)} ms, unknown address ${failed.unknownAddress.mean_ms.toFixed(1)} ms`,
    );
    const connections = 2 * cpus().length;
    const throughput = await measureLoginThroughput(
      service.port,
      host,
      seed.email,
      BENCH_PASSWORD,
      options.loginSeconds,
      connections,
    );
    log(
      `  successful logins, ${connections} connections × ${options.loginSeconds} s: ${throughput.rps.toFixed(1)} req/s, ${(throughput.rps / cpus().length).toFixed(1)} per core`,
    );
    rows.push({
      name: 'login-throughput',
      ...pick(throughput),
      ratio_to_baseline: null,
      rps_per_core: throughput.rps / cpus().length,
    });
    rows.push({
      name: 'login-argon2id-hash',
      rps: null,
      p50_ms: hash.p50_ms,
      p99_ms: hash.p99_ms,
      ratio_to_baseline: null,
      samples: hash.samples,
    });
    rows.push({
      name: 'login-wrong-password',
      rps: null,
      p50_ms: failed.wrongPassword.p50_ms,
      p99_ms: failed.wrongPassword.p99_ms,
      ratio_to_baseline: 1,
      samples: failed.wrongPassword.samples,
    });
    rows.push({
      name: 'login-unknown-address',
      rps: null,
      p50_ms: failed.unknownAddress.p50_ms,
      p99_ms: failed.unknownAddress.p99_ms,
      ratio_to_baseline: ratio,
      baseline: 'login-wrong-password (p50)',
      target: 'within 10% of wrong password',
      met: Math.abs(ratio - 1) <= 0.1,
      samples: failed.unknownAddress.samples,
    });
  }
  if (options.only.has('login-refusals')) {
    log(
      `login-refusals: the four refusals × ${options.loginSamples} each, one of each per round, rotated (load average ${load()})`,
    );
    const refusals = await measureRefusals(
      service.port,
      host,
      {
        wrongPassword: seed.wrongPasswordEmails,
        invited: seed.invitedEmails,
        deactivated: seed.deactivatedEmails,
        password: BENCH_PASSWORD,
      },
      options.loginSamples,
    );
    const reference = refusals['wrong-password'].p50_ms;
    for (const kind of REFUSALS) {
      const figures = refusals[kind];
      const ratio = figures.p50_ms / reference;
      log(`  ${kind}: p50 ${figures.p50_ms.toFixed(1)} ms, ${ratio.toFixed(3)}× wrong password`);
      rows.push({
        name: `login-refusal-${kind}`,
        rps: null,
        p50_ms: figures.p50_ms,
        p99_ms: figures.p99_ms,
        ratio_to_baseline: ratio,
        ...(kind === 'wrong-password'
          ? {}
          : {
              baseline: 'login-refusal-wrong-password (p50)',
              target: 'within 10% of wrong password',
              met: Math.abs(ratio - 1) <= 0.1,
            }),
        samples: figures.samples,
      });
    }
  }
  return rows;
}

const pick = (f: { rps: number; p50_ms: number; p99_ms: number; requests: number }) => ({
  rps: f.rps,
  p50_ms: f.p50_ms,
  p99_ms: f.p99_ms,
  samples: f.requests,
});

/** Both servers must answer the list with the same page before their speeds mean anything side by side. */
async function checkSameAnswer(servicePort: number, baselinePort: number, host: string, cookie: string): Promise<void> {
  const [a, b] = await Promise.all([
    send(servicePort, { method: 'GET', path: LIST_PATH, host, headers: { cookie } }),
    send(baselinePort, { method: 'GET', path: LIST_PATH, host: 'baseline' }),
  ]);
  if (a.status !== 200) throw new Error(`GET ${LIST_PATH} answered ${a.status}: ${a.body.slice(0, 300)}`);
  const service = JSON.parse(a.body) as { items: { name: string }[]; total: number };
  const baseline = JSON.parse(b.body) as { items: { name: string }[]; total: number };
  const names = (page: { items: { name: string }[] }) => page.items.map((i) => i.name).join(',');
  if (service.items.length !== 20 || service.total !== baseline.total || names(service) !== names(baseline)) {
    throw new Error(
      `the service and the baseline list different pages (totals ${service.total} and ${baseline.total})`,
    );
  }
}

main().catch((err: Error) => {
  process.stderr.write(`bench: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
