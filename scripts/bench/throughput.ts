import { readFileSync, readdirSync } from 'node:fs';
import { assertClean, combine, hammer, type Figures, type Sample, type Target } from './load.ts';

/**
 * CPU time so far of each process of a PostgreSQL server: the postmaster and every process under
 * it, each as `cpuOf` reads a process's CPU in milliseconds (by default user + system from /proc's
 * stat; a caller needing finer figures passes its own).
 */
export function serverCpu(postmasterPid: number, cpuOf: (pid: number) => number = cpuMs): Map<number, number> {
  const times = new Map<number, number>([[postmasterPid, cpuOf(postmasterPid)]]);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ');
      if (Number(fields[1]) !== postmasterPid) continue;
      const ms = cpuOf(Number(entry));
      if (Number.isFinite(ms)) times.set(Number(entry), ms);
    } catch {
      // The process ended while we looked.
    }
  }
  return times;
}

/** CPU the server used between two snapshots; a process that ended in between is left out (rare: pools keep their connections). */
export function serverCpuSince(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0);
  return total;
}

export interface Pair {
  name: string;
  service: Target;
  baseline: Target;
  /** The two server processes, for their CPU time per request. */
  pids: { service: number; baseline: number };
  /**
   * Waits until the service's worker has handled every event the last run published (and any job
   * due meanwhile), so that work never spills into the next measurement; resolves to how long
   * that took, and how long until the run's events alone were done (eventsMs).
   */
  settle(): Promise<Settled>;
}

export interface Settled {
  ms: number;
  eventsMs: number;
}

/** CPU time (user + system) a process has used so far, in milliseconds (Linux /proc). */
function cpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}

export interface PairFigures {
  service: Figures;
  baseline: Figures;
  /**
   * After each measured round of the service: how long until its worker had relayed (and so
   * audited) every event of the run and run every subscription job they made.
   */
  serviceEventsMs: number[];
}

export interface Plan {
  connections: number;
  warmupSeconds: number;
  seconds: number;
  rounds: number;
  log(line: string): void;
  postmasterPid?: number;
}

/**
 * Warms both servers up, then runs the service and its baseline in alternating order round by
 * round (A B, B A, ...), so load that drifts during the run falls on both sides alike.
 */
export async function measurePair(pair: Pair, plan: Plan): Promise<PairFigures> {
  const sides = [
    {
      label: pair.name,
      target: pair.service,
      pid: pair.pids.service,
      samples: [] as Sample[],
      eventsMs: [] as number[],
    },
    {
      label: `${pair.name}-baseline`,
      target: pair.baseline,
      pid: pair.pids.baseline,
      samples: [] as Sample[],
      eventsMs: [] as number[],
    },
  ];
  for (const side of sides) {
    assertClean(`${side.label} (warm-up)`, await hammer(side.target, plan.connections, plan.warmupSeconds));
    await pair.settle();
  }
  for (let round = 0; round < plan.rounds; round++) {
    const order = round % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) {
      const cpuBefore = cpuMs(side.pid);
      const pgBefore = plan.postmasterPid ? serverCpu(plan.postmasterPid) : undefined;
      const sample = await hammer(side.target, plan.connections, plan.seconds);
      const cpu = cpuMs(side.pid) - cpuBefore;
      const pgCpu =
        plan.postmasterPid && pgBefore ? serverCpuSince(pgBefore, serverCpu(plan.postmasterPid)) : Number.NaN;
      const { ms: settled, eventsMs } = await pair.settle();
      assertClean(side.label, sample);
      side.samples.push(sample);
      side.eventsMs.push(eventsMs);
      plan.log(
        `  ${side.label.padEnd(18)} round ${round + 1}: ${(sample.ok / sample.seconds).toFixed(0)} req/s, ` +
          `CPU per request: server ${((1000 * cpu) / sample.ok).toFixed(0)} µs (${((100 * cpu) / (sample.seconds * 1000)).toFixed(0)}% of a core)` +
          (Number.isNaN(pgCpu) ? '' : `, PostgreSQL ${((1000 * pgCpu) / sample.ok).toFixed(0)} µs`) +
          (settled > 200 ? `; its worker caught up ${(settled / 1000).toFixed(1)} s after the run` : ''),
      );
    }
  }
  return {
    service: combine(sides[0]!.samples),
    baseline: combine(sides[1]!.samples),
    serviceEventsMs: sides[0]!.eventsMs,
  };
}
