import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startServer, type ServerProcess } from './child.ts';
import { send } from './http.ts';
import { timing } from './login.ts';
import type { BenchOptions } from './options.ts';
import type { ResultRow } from './report.ts';
import type { ScenarioReady } from './scenario-service.ts';

/** What the webhooks scenario's service process is given. */
export interface WebhookBenchSettings {
  databaseUrl: string;
  poolSize: number;
  runId: string;
}

const ENDPOINTS = 4;
const TASKS = '/api/v1/task/tasks';
/** The fairness phase, as issue 41 found it: one tenant's 69 endpoints on task.task.created and 40 creates. */
export const FLOOD_ENDPOINTS = 69;
const FLOOD_TASKS = 40;
/** The other tenant's creates, one endpoint each delivery, measured with and then without the flood. */
const CALM_SAMPLES = 30;
const CALM_RATE = 4;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A loopback receiver answering 204 at once; it notes when each endpoint's message for each task
 * arrived, and counts the arrivals (all of them, and by the path's first segment).
 */
async function startReceiver(): Promise<{
  server: Server;
  port: number;
  arrivals: Map<string, number[]>;
  count: (prefix?: string) => number;
}> {
  const arrivals = new Map<string, number[]>();
  let count = 0;
  const byPrefix = new Map<string, number>();
  const server = createServer((req, res) => {
    const prefix = (req.url ?? '/').split('/')[1] ?? '';
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const at = performance.now();
      res.statusCode = 204;
      res.end();
      const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data?: { id?: unknown } };
      if (typeof message.data?.id !== 'string') return;
      const list = arrivals.get(message.data.id) ?? [];
      list.push(at);
      arrivals.set(message.data.id, list);
      count++;
      byPrefix.set(prefix, (byPrefix.get(prefix) ?? 0) + 1);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    arrivals,
    count: (prefix?: string) => (prefix === undefined ? count : (byPrefix.get(prefix) ?? 0)),
  };
}

type Receiver = Awaited<ReturnType<typeof startReceiver>>;
type Tenant = { host: string; cookie: string };

async function createEndpoint(port: number, tenant: Tenant, url: string): Promise<void> {
  const answer = await send(port, {
    method: 'POST',
    path: '/api/v1/webhook/endpoints',
    host: tenant.host,
    headers: { cookie: tenant.cookie },
    json: { url, events: ['task.task.created'] },
  });
  if (answer.status !== 201)
    throw new Error(`webhooks: creating an endpoint answered ${answer.status}: ${answer.body.slice(0, 300)}`);
}

/** A task create in the tenant; resolves with the task id and when the answer (its commit) came. */
async function createTask(port: number, tenant: Tenant): Promise<{ id: string; at: number }> {
  const answer = await send(port, {
    method: 'POST',
    path: TASKS,
    host: tenant.host,
    headers: { cookie: tenant.cookie },
    json: { title: 'Bench', priority: 'medium', deadline: new Date(Date.now() + 86_400_000).toISOString() },
  });
  if (answer.status !== 201)
    throw new Error(`webhooks: POST ${TASKS} answered ${answer.status}: ${answer.body.slice(0, 300)}`);
  return { id: (JSON.parse(answer.body) as { id: string }).id, at: performance.now() };
}

/**
 * The calm tenant's creates at CALM_RATE a second, each waited for at the receiver (up to 60 s):
 * from the create's answer to the arrival of its one delivery.
 */
async function calmLatencies(port: number, calm: Tenant, receiver: Receiver): Promise<number[]> {
  const created: { id: string; at: number }[] = [];
  const start = performance.now();
  const pending: Promise<void>[] = [];
  for (let seq = 0; seq < CALM_SAMPLES; seq++) {
    const wait = start + (seq * 1000) / CALM_RATE - performance.now();
    if (wait > 0.5) await sleep(wait);
    pending.push(createTask(port, calm).then((task) => void created.push(task)));
  }
  await Promise.all(pending);
  const deadline = performance.now() + 60_000;
  while (created.some((t) => !receiver.arrivals.has(t.id)) && performance.now() < deadline) await sleep(20);
  return created.map((t) => (receiver.arrivals.get(t.id)?.[0] ?? Number.POSITIVE_INFINITY) - t.at);
}

/**
 * The fairness phase (issue 41, point 4): the calm tenant's deliveries, one endpoint each, first
 * alone (the baseline), then while the flood tenant's FLOOD_ENDPOINTS endpoints work through
 * FLOOD_TASKS creates (FLOOD_ENDPOINTS × FLOOD_TASKS deliveries queued at once). Its latency
 * under the flood, beside its latency alone in the same run, says whether its deliveries wait
 * behind the flood; the flood's count when the calm tenant's last delivery arrived says the flood
 * was still under way.
 */
async function measureFairness(
  port: number,
  tenants: { flood: Tenant; calm: Tenant },
  receiver: Receiver,
  log: (line: string) => void,
  load: () => string,
): Promise<ResultRow[]> {
  for (let i = 0; i < FLOOD_ENDPOINTS; i++)
    await createEndpoint(port, tenants.flood, `http://127.0.0.1:${receiver.port}/flood/${i}`);
  await createEndpoint(port, tenants.calm, `http://127.0.0.1:${receiver.port}/calm`);
  const flood = FLOOD_ENDPOINTS * FLOOD_TASKS;
  log(
    `  fairness: a calm tenant's ${CALM_SAMPLES} creates at ${CALM_RATE}/s (one endpoint) alone, then while another tenant's ${FLOOD_ENDPOINTS} endpoints take ${FLOOD_TASKS} creates (${flood} deliveries) (load average ${load()})`,
  );
  const alone = timing(await calmLatencies(port, tenants.calm, receiver));
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < FLOOD_TASKS) {
        next++;
        await createTask(port, tenants.flood);
      }
    }),
  );
  // The flood under way: its jobs are queued ahead of anything the calm tenant sends now.
  const underWay = performance.now() + 60_000;
  while (receiver.count('flood') < 100 && performance.now() < underWay) await sleep(20);
  const floodAtStart = receiver.count('flood');
  const during = timing(await calmLatencies(port, tenants.calm, receiver));
  const floodAtEnd = receiver.count('flood');
  log(
    `  calm tenant alone: p50 ${alone.p50_ms.toFixed(1)} ms, p99 ${alone.p99_ms.toFixed(1)} ms; under the flood: p50 ${during.p50_ms.toFixed(1)} ms, p99 ${during.p99_ms.toFixed(1)} ms (the flood's deliveries: ${floodAtStart} of ${flood} arrived when the calm tenant began, ${floodAtEnd} when it was done; load average ${load()})`,
  );
  // The rest of the flood is let through before the services stop (the main service's worker
  // works the same queue and would otherwise keep sending to a receiver that is gone).
  const drainStart = performance.now();
  const drained = performance.now() + 300_000;
  while (receiver.count('flood') < flood && performance.now() < drained) await sleep(100);
  log(
    `  the flood's last ${flood - floodAtEnd} deliveries took ${((performance.now() - drainStart) / 1000).toFixed(1)} s (${receiver.count('flood')} of ${flood} arrived)`,
  );
  return [
    {
      name: 'webhook-fairness-calm-alone',
      rps: null,
      p50_ms: alone.p50_ms,
      p99_ms: alone.p99_ms,
      ratio_to_baseline: 1,
      rate: CALM_RATE,
      samples: alone.samples,
    },
    {
      name: 'webhook-fairness-calm-under-flood',
      rps: null,
      p50_ms: during.p50_ms,
      p99_ms: during.p99_ms,
      ratio_to_baseline: during.p99_ms / alone.p99_ms,
      baseline: 'webhook-fairness-calm-alone (p99)',
      rate: CALM_RATE,
      samples: during.samples,
      target: `p99 < 5 s while another tenant's ${flood} deliveries are queued`,
      met: during.p99_ms < 5000 && floodAtEnd < flood,
    },
  ];
}

/**
 * `--only webhooks`: task creates through the service (role all, webhooks.allow_private_networks
 * on) with ENDPOINTS endpoints of the tenant wanting task.task.created, all on one loopback
 * receiver in this process. Two phases: creates at a modest fixed rate, for the latency from the
 * create's answer (its transaction has committed) to the message's arrival; then a burst of
 * creates as fast as 8 connections go, for deliveries per second (deliveries over the time from
 * the first create to the last arrival). Both clocks are this process's.
 */
export async function measureWebhookGroup(
  options: BenchOptions,
  databaseUrl: string,
  runId: string,
  log: (line: string) => void,
  load: () => string,
): Promise<ResultRow[]> {
  const receiver = await startReceiver();
  const servers: ServerProcess[] = [];
  try {
    const settings: WebhookBenchSettings = { databaseUrl, poolSize: options.poolSize, runId };
    const service = await startServer('service-webhooks', './webhook-service.ts', settings);
    servers.push(service);
    const { host, cookie, tenants } = service.ready as unknown as ScenarioReady;
    for (let i = 0; i < ENDPOINTS; i++)
      await createEndpoint(service.port, { host, cookie }, `http://127.0.0.1:${receiver.port}/e${i}`);
    const answeredAt = new Map<string, number>();
    const create = async () => {
      const answer = await send(service.port, {
        method: 'POST',
        path: TASKS,
        host,
        headers: { cookie },
        json: { title: 'Bench', priority: 'medium', deadline: new Date(Date.now() + 86_400_000).toISOString() },
      });
      if (answer.status !== 201)
        throw new Error(`webhooks: POST ${TASKS} answered ${answer.status}: ${answer.body.slice(0, 300)}`);
      answeredAt.set((JSON.parse(answer.body) as { id: string }).id, performance.now());
    };
    const delivered = async (expected: number, timeoutMs: number) => {
      const deadline = performance.now() + timeoutMs;
      while (receiver.count() < expected && performance.now() < deadline) await sleep(20);
      return receiver.count();
    };
    // Warm-up: connections, prepared statements, the pg-boss queues.
    for (let i = 0; i < 10; i++) await create();
    await delivered(10 * ENDPOINTS, 60_000);

    const rate = options.webhookRate;
    const latencyEvents = options.webhookEvents;
    log(
      `webhooks: ${ENDPOINTS} endpoints on a loopback receiver; ${latencyEvents} creates at ${rate}/s for the latency, then ${latencyEvents} as fast as 8 connections go (load average ${load()})`,
    );
    receiver.arrivals.clear();
    answeredAt.clear();
    const base = receiver.count();
    const start = performance.now();
    const pending: Promise<void>[] = [];
    for (let seq = 0; seq < latencyEvents; seq++) {
      const wait = start + (seq * 1000) / rate - performance.now();
      if (wait > 0.5) await sleep(wait);
      pending.push(create());
    }
    await Promise.all(pending);
    const got = (await delivered(base + latencyEvents * ENDPOINTS, 120_000)) - base;
    const latencies: number[] = [];
    for (const [taskId, at] of answeredAt)
      for (const arrived of receiver.arrivals.get(taskId) ?? []) latencies.push(arrived - at);
    const fromCommit = timing(latencies);
    log(
      `  latency: ${got} of ${latencyEvents * ENDPOINTS} deliveries; commit → receipt p50 ${fromCommit.p50_ms.toFixed(1)} ms, p99 ${fromCommit.p99_ms.toFixed(1)} ms`,
    );

    const burstBase = receiver.count();
    const burstStart = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < latencyEvents) {
          next++;
          await create();
        }
      }),
    );
    const createdMs = performance.now() - burstStart;
    const burstGot = (await delivered(burstBase + latencyEvents * ENDPOINTS, 180_000)) - burstBase;
    const lastArrival = Math.max(...[...receiver.arrivals.values()].flat());
    const perSecond = burstGot / ((lastArrival - burstStart) / 1000);
    log(
      `  burst: ${latencyEvents} creates in ${(createdMs / 1000).toFixed(1)} s; ${burstGot} of ${latencyEvents * ENDPOINTS} deliveries, ${perSecond.toFixed(0)} deliveries/s`,
    );
    const fairness = await measureFairness(
      service.port,
      { flood: tenants.flood!, calm: tenants.calm! },
      receiver,
      log,
      load,
    );
    return [
      {
        name: 'webhook-commit-to-receipt',
        rps: null,
        p50_ms: fromCommit.p50_ms,
        p99_ms: fromCommit.p99_ms,
        ratio_to_baseline: null,
        rate,
        samples: fromCommit.samples,
      },
      {
        name: 'webhook-deliveries',
        rps: perSecond,
        p50_ms: null,
        p99_ms: null,
        ratio_to_baseline: null,
        samples: burstGot,
      },
      ...fairness,
    ];
  } finally {
    await Promise.allSettled(servers.map((s) => s.stop()));
    await new Promise((resolve) => receiver.server.close(resolve));
  }
}
