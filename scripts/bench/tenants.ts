import { fork } from 'node:child_process';
import { Agent, request } from 'node:http';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { percentile } from './load.ts';
import type { BenchOptions } from './options.ts';
import type { ResultRow } from './report.ts';
import { SETTINGS_ENV } from './protocol.ts';
import { startNodeOptions } from '../start-options.ts';
import type { TenantsMessage, TenantsRequest, TenantsServiceSettings } from './tenants-protocol.ts';
import { PAST_DEADLINE_PER_TENANT, TenantSeeder, tenantHost } from './tenants-seed.ts';
import { SlotSource, premise } from './tenants-premises.ts';

/** The `tenants` scenario's targets at 10,000 tenants (issue 36); they are checked at every size. */
const TARGETS = {
  billingRenewMs: 5 * 60_000,
  workerRssMiB: 300,
  sweepMs: 2 * 60_000,
  listDuringFanOut: 3,
  roundRobinVsOneHost: 0.9,
  pagingVsSmallest: 1.3,
  startupVsSmallest: 1.3,
};

interface Child {
  port: number;
  startupMs: number;
  cookieName: string;
  ask<T extends TenantsMessage['type']>(
    request: TenantsRequest,
    type: T,
    timeoutMs: number,
  ): Promise<Extract<TenantsMessage, { type: T }>>;
  stop(): Promise<void>;
}

/** Forks a web or worker process of the scenario, started with its role's Node options, and waits until it is ready. */
async function startChild(settings: TenantsServiceSettings): Promise<Child> {
  const child = fork(fileURLToPath(new URL('./tenants-service.ts', import.meta.url)), [], {
    execArgv: [...process.execArgv, ...startNodeOptions(`start:${settings.role}`)],
    env: { ...process.env, [SETTINGS_ENV]: JSON.stringify(settings) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const next = <T extends TenantsMessage['type']>(type: T, timeoutMs: number) =>
    new Promise<Extract<TenantsMessage, { type: T }>>((resolve, reject) => {
      const timer = setTimeout(
        () => done(new Error(`tenants ${settings.role} did not answer ${type} within ${timeoutMs / 1000} s`)),
        timeoutMs,
      );
      const onMessage = (message: TenantsMessage) => {
        if (message.type === 'failed') done(new Error(`tenants ${settings.role}: ${message.error}`));
        else if (message.type === type) done(undefined, message as Extract<TenantsMessage, { type: T }>);
      };
      const onExit = (code: number | null) =>
        done(new Error(`tenants ${settings.role} exited (${code}) before ${type}`));
      const done = (err?: Error, message?: Extract<TenantsMessage, { type: T }>) => {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
        if (err) reject(err);
        else resolve(message!);
      };
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  const ready = await next('ready', 180_000);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    port: ready.port,
    startupMs: ready.startupMs,
    cookieName: ready.cookieName,
    ask: (req, type, timeoutMs) => {
      const answer = next(type, timeoutMs);
      child.send(req);
      return answer;
    },
    stop: async () => {
      if (child.exitCode !== null) return;
      child.send({ type: 'stop' } satisfies TenantsRequest);
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

const agent = new Agent({ keepAlive: true, maxSockets: 256 });

function get(port: number, path: string, host: string, cookie?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, agent, headers: { host, ...(cookie ? { cookie } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

interface Load {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
}

/**
 * Closed-loop load from this process: `connections` loops, each sending its next request when the
 * last is answered, until `until` resolves or `seconds` pass. Every answer must have `status`.
 */
async function closedLoop(options: {
  port: number;
  connections: number;
  seconds?: number;
  until?: Promise<unknown>;
  next: (i: number) => { path: string; host: string; cookie?: string };
  status: number;
}): Promise<Load> {
  const latencies: number[] = [];
  let stop = false;
  let sent = 0;
  const started = performance.now();
  const timer = options.seconds ? setTimeout(() => (stop = true), options.seconds * 1000) : undefined;
  void options.until?.finally(() => (stop = true));
  await Promise.all(
    Array.from({ length: options.connections }, async () => {
      while (!stop) {
        const target = options.next(sent++);
        const at = performance.now();
        const answer = await get(options.port, target.path, target.host, target.cookie);
        if (answer.status !== options.status)
          throw new Error(
            `GET ${target.path} at ${target.host} answered ${answer.status}, not ${options.status}: ${answer.body.slice(0, 200)}`,
          );
        latencies.push(performance.now() - at);
      }
    }),
  );
  clearTimeout(timer);
  const seconds = (performance.now() - started) / 1000;
  const sorted = Float64Array.from(latencies).sort();
  return {
    rps: latencies.length / seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    requests: latencies.length,
  };
}

/** Loads of the same length pooled: requests over their summed seconds, the percentiles of the worst round. */
function pooled(loads: Load[]): Load {
  const requests = loads.reduce((sum, load) => sum + load.requests, 0);
  const seconds = loads.reduce((sum, load) => sum + load.requests / load.rps, 0);
  return {
    rps: requests / seconds,
    p50: Math.max(...loads.map((load) => load.p50)),
    p99: Math.max(...loads.map((load) => load.p99)),
    requests,
  };
}

/** A sibling database of the bench's, so the scenario's 10,000 tenants meet no other scenario's worker. */
async function scenarioDatabase(benchUrl: string, runId: string): Promise<string> {
  const name = `tenantry_bench_tenants_${runId}`;
  const client = new pg.Client({ connectionString: benchUrl });
  await client.connect();
  try {
    await client.query(`create database ${client.escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
  const url = new URL(benchUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

const row = (
  name: string,
  tenants: number,
  fields: Partial<ResultRow> & { value?: number; unit?: string },
): ResultRow => ({
  name: `tenants-${tenants}-${name}`,
  rps: null,
  p50_ms: null,
  p99_ms: null,
  ratio_to_baseline: null,
  tenants,
  ...fields,
});

/**
 * `--only tenants`: 100, 1,000 and 10,000 tenants (`--tenant-sizes`), each with a host, the seeded
 * roles, an admin, a subscription due for renewal, 10 tasks (3 past their deadline), expired
 * sessions and spent tokens, seeded set-based (tenants-seed.ts) in a database of its own. At each
 * size: a web process's start-up, host resolution round-robin over every host against one host,
 * the operator's tenant list by cursor, auth-sweep, billing-renew (with the sandbox settling) and
 * task-sla-sweep run by a worker process as the schedule would, and a tenant's list p99 idle and
 * while the task-sla-sweep fan-out runs. Figures are in rows named tenants-<size>-<figure>.
 *
 * Each stage sets the state its checks compare with (makeDue), runs each job under a slot of its
 * own, and stops the bench (PremiseError) when that state is not what a check finds before its
 * job runs: due subscriptions before billing-renew must be the stage's size, and so on.
 */
export async function measureTenantsGroup(
  options: BenchOptions,
  benchUrl: string,
  runId: string,
  log: (line: string) => void,
  load: () => string,
): Promise<ResultRow[]> {
  const databaseUrl = await scenarioDatabase(benchUrl, runId);
  const rows: ResultRow[] = [];
  // The first process migrates the new database and creates the operator tenant.
  const first = await startChild({ databaseUrl, poolSize: options.poolSize, role: 'web' });
  await first.stop();
  const seeder = await TenantSeeder.open(databaseUrl);
  const smallest: { startupMs?: number; pagingP50?: number } = {};
  const slots = new SlotSource();
  try {
    for (const size of options.tenantSizes) {
      const stage = `tenants ${size}`;
      const seedStarted = performance.now();
      await seeder.growTo(size);
      const made = await seeder.makeDue();
      premise(stage, 'bench subscriptions made due', made.subscriptions, size);
      premise(stage, 'overdue tasks made unmarked', made.overdueTasks, size * PAST_DEADLINE_PER_TENANT);
      log(
        `tenants ${size}: seeded in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s (load average ${load()})`,
      );

      // Start-up of a web process: process start to listening, best of three (the machine is shared).
      const startups: number[] = [];
      let web: Child | undefined;
      for (let i = 0; i < 3; i++) {
        await web?.stop();
        web = await startChild({ databaseUrl, poolSize: options.poolSize, role: 'web' });
        startups.push(web.startupMs);
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
      const startup = Math.min(...startups);
      smallest.startupMs ??= startup;
      const startupRatio = startup / smallest.startupMs;
      rows.push(
        row('web-startup', size, {
          p50_ms: startup,
          ratio_to_baseline: startupRatio,
          baseline: `start-up at ${options.tenantSizes[0]} tenants`,
          target: `≤ ${TARGETS.startupVsSmallest}× the start-up at the smallest size`,
          met: startupRatio <= TARGETS.startupVsSmallest,
        }),
      );
      log(`  web start-up ${startups.map((ms) => ms.toFixed(0)).join(', ')} ms`);

      try {
        const webPort = web!.port;
        const operatorCookie = `${web!.cookieName}=${await seeder.adminSession('operator')}`;
        const tenantCookie = `${web!.cookieName}=${await seeder.adminSession(1)}`;

        // Host resolution: an anonymous GET answered 401 once the host is resolved, to one host on 32
        // connections and to every host in turn (operator's included) on 32 others, in the same 5 s
        // window, three rounds. Measured apart, each side swung 12,000-23,000 req/s from one round to
        // the next on two shared cores, so a ratio of two figures taken seconds apart was noise of
        // ±30 %; side by side, both meet the same machine, and the ratio of the rounds' pooled
        // requests is the cost of resolving many hosts rather than one.
        const hosts = [...Array.from({ length: size }, (_, i) => tenantHost(i + 1)), 'localhost'];
        const probe = { path: '/api/v1/user/users', status: 401 };
        // One turn through the hosts across every round-robin run, so each run goes on where the last stopped.
        let turn = 0;
        let everyHostAsked!: () => void;
        const warmed = new Promise<void>((resolve) => (everyHostAsked = resolve));
        const nextHost = () => {
          const host = hosts[turn++ % hosts.length]!;
          if (turn === hosts.length) everyHostAsked();
          return { ...probe, host };
        };
        const oneHost = () => ({ ...probe, host: tenantHost(1) });
        // The warm-up asks every host once (and lasts 2 s at least): the rounds compare hosts already
        // resolved. A 2 s warm-up alone did not reach every one of 10,000 hosts, and the first round
        // resolved the rest (0.63-0.77 in the first round at 10,000, 1.00 in the next two).
        const twoSeconds = new Promise((resolve) => setTimeout(resolve, 2000));
        const warm = await closedLoop({
          port: webPort,
          connections: 64,
          until: Promise.all([warmed, twoSeconds]),
          next: nextHost,
          status: 401,
        });
        log(
          `  host warm-up: ${warm.requests} requests in ${(warm.requests / warm.rps).toFixed(1)} s, every host asked`,
        );
        const one: Load[] = [];
        const all: Load[] = [];
        for (let round = 0; round < 3; round++) {
          const [single, spread] = await Promise.all([
            closedLoop({ port: webPort, connections: 32, seconds: 5, next: oneHost, status: 401 }),
            closedLoop({ port: webPort, connections: 32, seconds: 5, next: nextHost, status: 401 }),
          ]);
          one.push(single);
          all.push(spread);
        }
        const rr = pooled(all);
        const single = pooled(one);
        const cached = (await web!.ask({ type: 'cache-size' }, 'cache-size', 10_000)).size;
        // Every host asked stays cached: all of them, unless the machine was too slow to ask each once.
        const asked = Math.min(hosts.length, turn);
        log(
          `  host resolution, side by side: one host ${single.rps.toFixed(0)} req/s, round-robin over ${hosts.length} hosts ${rr.rps.toFixed(0)} req/s (rounds ${one.map((o, i) => (all[i]!.rps / o.rps).toFixed(2)).join(', ')}); ${cached} hosts cached of ${asked} asked`,
        );
        rows.push(
          row('host-one', size, { rps: single.rps, p50_ms: single.p50, p99_ms: single.p99, samples: single.requests }),
        );
        rows.push(
          row('host-round-robin', size, {
            rps: rr.rps,
            p50_ms: rr.p50,
            p99_ms: rr.p99,
            samples: rr.requests,
            ratio_to_baseline: rr.rps / single.rps,
            baseline: 'one host, same path, 32 connections each side, in the same window',
            hosts: hosts.length,
            hosts_cached: cached,
            target: `≥ ${TARGETS.roundRobinVsOneHost}× one host's throughput; every host asked stays cached (no cliff past 10,000)`,
            met: rr.rps / single.rps >= TARGETS.roundRobinVsOneHost && cached >= asked,
          }),
        );

        // The operator's tenant list: the first page and the next nine by cursor, sequentially, repeated.
        const pageLatencies: number[] = [];
        for (let walk = 0; walk < 10; walk++) {
          let after: string | null = null;
          for (let page = 0; page < 10; page++) {
            const at = performance.now();
            const answer = await get(
              webPort,
              `/api/v1/tenant/tenants?limit=20${after ? `&after=${after}` : ''}`,
              'localhost',
              operatorCookie,
            );
            if (answer.status !== 200)
              throw new Error(`tenant list answered ${answer.status}: ${answer.body.slice(0, 200)}`);
            pageLatencies.push(performance.now() - at);
            after = (JSON.parse(answer.body) as { next: string | null }).next;
            if (!after) break;
          }
        }
        const paging = Float64Array.from(pageLatencies).sort();
        const pagingP50 = percentile(paging, 50);
        smallest.pagingP50 ??= pagingP50;
        const pagingRatio = pagingP50 / smallest.pagingP50;
        rows.push(
          row('tenant-list-paging', size, {
            p50_ms: pagingP50,
            p99_ms: percentile(paging, 99),
            samples: paging.length,
            ratio_to_baseline: pagingRatio,
            baseline: `p50 at ${options.tenantSizes[0]} tenants`,
            target: `p50 ≤ ${TARGETS.pagingVsSmallest}× the p50 at the smallest size`,
            met: pagingRatio <= TARGETS.pagingVsSmallest,
          }),
        );
        const searchLatencies: number[] = [];
        for (let i = 0; i < 50; i++) {
          const at = performance.now();
          const answer = await get(
            webPort,
            `/api/v1/tenant/tenants?limit=20&q=${encodeURIComponent(`bt-${1 + ((i * 37) % size)}`)}`,
            'localhost',
            operatorCookie,
          );
          if (answer.status !== 200)
            throw new Error(`tenant search answered ${answer.status}: ${answer.body.slice(0, 200)}`);
          searchLatencies.push(performance.now() - at);
        }
        const search = Float64Array.from(searchLatencies).sort();
        rows.push(
          row('tenant-list-search', size, {
            p50_ms: percentile(search, 50),
            p99_ms: percentile(search, 99),
            samples: search.length,
          }),
        );
        log(
          `  operator's tenant list: cursor pages p50 ${pagingP50.toFixed(2)} ms (${pagingRatio.toFixed(2)}× the smallest size), q search p50 ${percentile(search, 50).toFixed(2)} ms`,
        );

        // The jobs, as the schedule would run them, in a worker process of their own.
        const worker = await startChild({ databaseUrl, poolSize: options.poolSize, role: 'worker' });
        try {
          const beforeAuth = await seeder.sweepCheck();
          premise(stage, 'expired sessions before auth-sweep', beforeAuth.sessions, made.sessions);
          premise(stage, 'spent set-password tokens before auth-sweep', beforeAuth.tokens, made.tokens);
          const auth = await worker.ask(
            { type: 'run-job', job: 'auth-sweep', slot: slots.next() },
            'job-done',
            30 * 60_000,
          );
          const afterAuth = await seeder.sweepCheck();
          rows.push(
            row('auth-sweep', size, {
              p50_ms: auth.ms,
              target: `≤ ${TARGETS.sweepMs / 1000} s, no expired session or spent token left`,
              met: auth.ms <= TARGETS.sweepMs && afterAuth.sessions === 0 && afterAuth.tokens === 0,
            }),
          );
          log(
            `  auth-sweep ${(auth.ms / 1000).toFixed(1)} s; left ${afterAuth.sessions} expired sessions, ${afterAuth.tokens} spent tokens`,
          );

          // Every bench subscription is due, none was renewed since makeDue, and the run queues one
          // run per served tenant: otherwise "every due subscription renewed" is measured over
          // state the stage did not set.
          const beforeRenew = await seeder.billingCheck();
          premise(stage, 'bench subscriptions due before billing-renew', beforeRenew.due, size);
          const served = await seeder.servedTenants();
          const renewSlot = slots.next();
          const renewStarted = new Date();
          const renew = await worker.ask(
            { type: 'run-job', job: 'billing-renew', slot: renewSlot },
            'job-done',
            60 * 60_000,
          );
          premise(stage, 'billing-renew runs queued (one per served tenant)', renew.runs, served);
          const billing = await seeder.billingCheck();
          const everyDueRenewed = billing.due === 0 && billing.renewed === beforeRenew.due;
          rows.push(
            row('billing-renew', size, {
              p50_ms: renew.ms,
              rss_peak_mib: renew.rssPeakMiB,
              runs: renew.runs,
              due_before: beforeRenew.due,
              renewed: billing.renewed,
              still_due: billing.due,
              every_due_renewed: everyDueRenewed,
              double_charged: billing.doubleCharged,
              slot: renewSlot,
              target: `≤ ${TARGETS.billingRenewMs / 60_000} min, every due subscription renewed, none charged twice, worker RSS < ${TARGETS.workerRssMiB} MiB`,
              met:
                renew.ms <= TARGETS.billingRenewMs &&
                everyDueRenewed &&
                billing.doubleCharged === 0 &&
                renew.rssPeakMiB < TARGETS.workerRssMiB &&
                renew.failed === 0,
            }),
          );
          log(
            `  billing-renew (slot ${renewSlot}, started ${renewStarted.toISOString()}) ${(renew.ms / 1000).toFixed(1)} s over ${renew.runs} runs (${renew.failed} failed); every due subscription renewed: ${everyDueRenewed ? 'yes' : 'NO'} (${billing.renewed} renewed of ${beforeRenew.due} due before the run, ${billing.due} still due); ${billing.doubleCharged} charged twice; worker RSS peak ${renew.rssPeakMiB.toFixed(0)} MiB`,
          );

          // A tenant's list idle, then while the task-sla-sweep fan-out runs (8 connections).
          const list = { path: '/api/v1/task/tasks?limit=20', host: tenantHost(1), cookie: tenantCookie };
          await closedLoop({ port: webPort, connections: 8, seconds: 2, next: () => list, status: 200 });
          const idle = await closedLoop({ port: webPort, connections: 8, seconds: 8, next: () => list, status: 200 });
          const beforeSla = await seeder.sweepCheck();
          premise(stage, 'overdue tasks unmarked before task-sla-sweep', beforeSla.unmarked, made.overdueTasks);
          const sweep = worker.ask(
            { type: 'run-job', job: 'task-sla-sweep', slot: slots.next() },
            'job-done',
            30 * 60_000,
          );
          const busy = await closedLoop({ port: webPort, connections: 8, until: sweep, next: () => list, status: 200 });
          const sla = await sweep;
          const afterSla = await seeder.sweepCheck();
          const listRatio = busy.p99 / idle.p99;
          rows.push(
            row('task-sla-sweep', size, {
              p50_ms: sla.ms,
              runs: sla.runs,
              target: `≤ ${TARGETS.sweepMs / 1000} s (measured under the list load), every overdue task marked`,
              met: sla.ms <= TARGETS.sweepMs && afterSla.unmarked === 0 && sla.failed === 0,
            }),
          );
          rows.push(
            row('tenant-list-idle', size, {
              rps: idle.rps,
              p50_ms: idle.p50,
              p99_ms: idle.p99,
              samples: idle.requests,
            }),
          );
          rows.push(
            row('tenant-list-during-fan-out', size, {
              rps: busy.rps,
              p50_ms: busy.p50,
              p99_ms: busy.p99,
              samples: busy.requests,
              ratio_to_baseline: listRatio,
              baseline: 'p99 idle',
              target: `p99 ≤ ${TARGETS.listDuringFanOut}× idle`,
              met: listRatio <= TARGETS.listDuringFanOut,
            }),
          );
          log(
            `  task-sla-sweep ${(sla.ms / 1000).toFixed(1)} s over ${sla.runs} runs, ${afterSla.unmarked} overdue left; tenant list p99 idle ${idle.p99.toFixed(1)} ms, during the fan-out ${busy.p99.toFixed(1)} ms (${listRatio.toFixed(2)}×)`,
          );
        } finally {
          await worker.stop();
        }
      } finally {
        await web!.stop();
      }
    }
  } finally {
    await seeder.close();
    agent.destroy();
  }
  return rows;
}
