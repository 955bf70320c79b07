import { assertClean, combine, hammer, type Figures, type Sample, type Target } from './load.ts';

export interface Pair {
  name: string;
  service: Target;
  baseline: Target;
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
    { label: pair.name, target: pair.service, samples: [] as Sample[] },
    { label: `${pair.name}-baseline`, target: pair.baseline, samples: [] as Sample[] },
  ];
  for (const side of sides) assertClean(`${side.label} (warm-up)`, await hammer(side.target, plan.connections, plan.warmupSeconds));
  for (let round = 0; round < plan.rounds; round++) {
    const order = round % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) {
      const sample = await hammer(side.target, plan.connections, plan.seconds);
      assertClean(side.label, sample);
      side.samples.push(sample);
      plan.log(`  ${side.label.padEnd(18)} round ${round + 1}: ${(sample.ok / sample.seconds).toFixed(0)} req/s`);
    }
  }
  return { service: combine(sides[0]!.samples), baseline: combine(sides[1]!.samples) };
}
