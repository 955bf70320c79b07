import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startServer, type ServerProcess } from './child.ts';
import { send } from './http.ts';
import { timing } from './login.ts';
import type { BenchOptions } from './options.ts';
import type { ResultRow } from './report.ts';

/** What the webhooks scenario's service process is given. */
export interface WebhookBenchSettings {
  databaseUrl: string;
  poolSize: number;
  runId: string;
}

const ENDPOINTS = 4;
const TASKS = '/api/v1/task/tasks';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A loopback receiver answering 204 at once; it notes when each endpoint's message for each task arrived. */
async function startReceiver(): Promise<{
  server: Server;
  port: number;
  arrivals: Map<string, number[]>;
  count: () => number;
}> {
  const arrivals = new Map<string, number[]>();
  let count = 0;
  const server = createServer((req, res) => {
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
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, arrivals, count: () => count };
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
    const { host, cookie } = service.ready as unknown as { host: string; cookie: string };
    for (let i = 0; i < ENDPOINTS; i++) {
      const answer = await send(service.port, {
        method: 'POST',
        path: '/api/v1/webhook/endpoints',
        host,
        headers: { cookie },
        json: { url: `http://127.0.0.1:${receiver.port}/e${i}`, events: ['task.task.created'] },
      });
      if (answer.status !== 201)
        throw new Error(`webhooks: creating an endpoint answered ${answer.status}: ${answer.body.slice(0, 300)}`);
    }
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
    ];
  } finally {
    await Promise.allSettled(servers.map((s) => s.stop()));
    await new Promise((resolve) => receiver.server.close(resolve));
  }
}
