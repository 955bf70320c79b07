import { fileURLToPath } from 'node:url';
import { defineModule, type ModuleDefinition } from '../../framework/entity/define.ts';

export const PROBE_EVENT = 'bench.probe.sent';

/** Wall-clock milliseconds with sub-millisecond precision, comparable across processes on one machine. */
export const wallClockMs = (): number => performance.timeOrigin + performance.now();

/**
 * Arrival times of probe events at their subscription handler, keyed by the sequence number each
 * probe carries. The handler records and returns: it measures delivery, not work.
 */
export class ProbeRecorder {
  readonly arrivedAt = new Map<number, number>();
  readonly occurredAt = new Map<number, number>();
  private waiters: { count: number; resolve(): void }[] = [];

  record(seq: number, occurredAt: string, at: number): void {
    if (this.arrivedAt.has(seq)) return;
    this.arrivedAt.set(seq, at);
    this.occurredAt.set(seq, Date.parse(occurredAt));
    this.waiters = this.waiters.filter((w) => {
      if (this.arrivedAt.size < w.count) return true;
      w.resolve();
      return false;
    });
  }

  /** Resolves once count probes arrived, or after timeoutMs (the caller counts what is missing). */
  waitFor(count: number, timeoutMs: number): Promise<void> {
    if (this.arrivedAt.size >= count) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.waiters.push({
        count,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  clear(): void {
    this.arrivedAt.clear();
    this.occurredAt.clear();
  }
}

/**
 * A module that exists only in benchmark runs: one event and one subscription recording when the
 * handler starts, for the outbox commit → handler latency. No tables, so no migrations.
 */
export function benchModule(recorder: ProbeRecorder): ModuleDefinition {
  return defineModule({
    name: 'bench',
    description: 'Benchmark probes (never installed in a deployment)',
    events: [PROBE_EVENT],
    subscriptions: [
      {
        name: 'bench-probe-arrival',
        event: PROBE_EVENT,
        handle: async (_ctx, event) => {
          recorder.record(Number(event.payload.seq), event.occurredAt, wallClockMs());
        },
      },
    ],
    migrations: fileURLToPath(new URL('./no-migrations', import.meta.url)),
  });
}
