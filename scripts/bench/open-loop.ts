import { Agent, request } from 'node:http';
import { randomUUID } from 'node:crypto';
import { percentile, type Target } from './load.ts';

export interface OpenLoopSample {
  /** Requests scheduled (rate × seconds), and those answered as the target expects. */
  scheduled: number;
  ok: number;
  refused: Record<string, number>;
  errors: number;
  /** Latency of each answered request from the moment it was scheduled to leave, milliseconds. */
  latencies: number[];
  /** The largest delay between a request's scheduled time and its actual send (the generator's own lag). */
  maxSendLagMs: number;
}

export interface OpenLoopFigures {
  rate: number;
  p50_ms: number;
  p99_ms: number;
  p999_ms: number;
  requests: number;
  maxSendLagMs: number;
}

/**
 * Open-loop load: requests leave on a fixed schedule (rate per second) whether or not earlier
 * ones were answered, over a pool of keep-alive connections large enough never to be the limit.
 * Latency runs from each request's scheduled time, not from when a connection became free: a
 * server that stalls is charged for every request that should have left meanwhile (no
 * coordinated omission). A closed-loop generator, such as one with a fixed number of
 * connections, stops sending while the server stalls and so under-reports the tail.
 */
export async function openLoop(
  target: Target,
  rate: number,
  seconds: number,
  maxSockets = 512,
): Promise<OpenLoopSample> {
  const url = new URL(target.url);
  const agent = new Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
  const total = Math.round(rate * seconds);
  const interval = 1000 / rate;
  const sample: OpenLoopSample = { scheduled: total, ok: 0, refused: {}, errors: 0, latencies: [], maxSendLagMs: 0 };
  const pending: Promise<void>[] = [];
  const fire = (scheduledAt: number): Promise<void> =>
    new Promise((resolve) => {
      const body = target.body?.replaceAll('[<id>]', randomUUID());
      const req = request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          path: url.pathname + url.search,
          method: target.method,
          headers: { ...target.headers, ...(body !== undefined ? { 'content-length': Buffer.byteLength(body) } : {}) },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            const expected =
              target.expectStatus === undefined ? status >= 200 && status < 300 : status === target.expectStatus;
            if (expected) {
              sample.ok++;
              sample.latencies.push(performance.now() - scheduledAt);
            } else sample.refused[status] = (sample.refused[status] ?? 0) + 1;
            resolve();
          });
        },
      );
      req.on('error', () => {
        sample.errors++;
        resolve();
      });
      req.end(body);
    });
  const start = performance.now();
  let sent = 0;
  await new Promise<void>((done) => {
    const tick = () => {
      const now = performance.now();
      // Everything due by now leaves now, each timed from its own scheduled moment.
      while (sent < total && start + sent * interval <= now) {
        const scheduledAt = start + sent * interval;
        sample.maxSendLagMs = Math.max(sample.maxSendLagMs, now - scheduledAt);
        pending.push(fire(scheduledAt));
        sent++;
      }
      if (sent >= total) return done();
      setTimeout(tick, Math.max(0, start + sent * interval - performance.now()));
    };
    tick();
  });
  await Promise.all(pending);
  agent.destroy();
  return sample;
}

export function openLoopFigures(rate: number, samples: OpenLoopSample[]): OpenLoopFigures {
  const all = Float64Array.from(samples.flatMap((s) => s.latencies)).sort();
  return {
    rate,
    p50_ms: percentile(all, 50),
    p99_ms: percentile(all, 99),
    p999_ms: percentile(all, 99.9),
    requests: all.length,
    maxSendLagMs: Math.max(...samples.map((s) => s.maxSendLagMs)),
  };
}

/** Refuses figures of a run in which any request failed or was answered otherwise than expected. */
export function assertOpenLoopClean(name: string, sample: OpenLoopSample): void {
  const refused = Object.entries(sample.refused);
  if (refused.length > 0 || sample.errors > 0 || sample.ok !== sample.scheduled) {
    const codes = refused.map(([code, n]) => `${n}× ${code}`).join(', ');
    throw new Error(
      `${name} (open loop): ${sample.ok} of ${sample.scheduled} answered as expected${codes ? `; ${codes}` : ''}${sample.errors ? `; ${sample.errors} errors` : ''}`,
    );
  }
}
