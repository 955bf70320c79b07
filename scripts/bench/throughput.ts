import { readFileSync } from 'node:fs';
import { assertClean, combine, hammer, type Figures, type Sample, type Target } from './load.ts';

export interface Pair {
  name: string;
  service: Target;
  baseline: Target;
  /** The two server processes, for their CPU time per request. */
  pids: { service: number; baseline: number };
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
}

export interface Plan {
  connections: number;
  warmupSeconds: number;
  seconds: number;
  rounds: number;
  log(line: string): void;
}

/**
 * Warms both servers up, then runs the service and its baseline in alternating order round by
 * round (A B, B A, ...), so load that drifts during the run falls on both sides alike.
 */
export async function measurePair(pair: Pair, plan: Plan): Promise<PairFigures> {
  const sides = [
    { label: pair.name, target: pair.service, pid: pair.pids.service, samples: [] as Sample[] },
    { label: `${pair.name}-baseline`, target: pair.baseline, pid: pair.pids.baseline, samples: [] as Sample[] },
  ];
  for (const side of sides) assertClean(`${side.label} (warm-up)`, await hammer(side.target, plan.connections, plan.warmupSeconds));
  for (let round = 0; round < plan.rounds; round++) {
    const order = round % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) {
      const cpuBefore = cpuMs(side.pid);
      const sample = await hammer(side.target, plan.connections, plan.seconds);
      const cpu = cpuMs(side.pid) - cpuBefore;
      assertClean(side.label, sample);
      side.samples.push(sample);
      plan.log(
        `  ${side.label.padEnd(18)} round ${round + 1}: ${(sample.ok / sample.seconds).toFixed(0)} req/s, ` +
          `server process ${((100 * cpu) / (sample.seconds * 1000)).toFixed(0)}% of a core, ${((1000 * cpu) / sample.ok).toFixed(0)} µs CPU per request`,
      );
    }
  }
  return { service: combine(sides[0]!.samples), baseline: combine(sides[1]!.samples) };
}
