import type { Target } from './load.ts';
import { assertOpenLoopClean, openLoop, openLoopFigures, type OpenLoopSample } from './open-loop.ts';
import type { ResultRow } from './report.ts';

export interface TailPlan {
  name: string;
  service: Target;
  baseline: Target;
  /** Requests per second sent to each side: half the bare baseline's measured closed-loop peak. */
  rate: number;
  seconds: number;
  rounds: number;
  settle(): Promise<unknown>;
  log(line: string): void;
}

/**
 * Tail latency at a fixed load: the service and its baseline each receive the same open-loop
 * schedule (alternating within rounds, like the throughput pairs), after a short warm-up that
 * also opens the connections. Target: the service's p99 at most twice the baseline's.
 */
export async function measureTail(plan: TailPlan): Promise<ResultRow[]> {
  const sides = [
    { label: plan.name, target: plan.service, samples: [] as OpenLoopSample[] },
    { label: `${plan.name}-baseline`, target: plan.baseline, samples: [] as OpenLoopSample[] },
  ];
  for (const side of sides) {
    assertOpenLoopClean(`${side.label} (warm-up)`, await openLoop(side.target, plan.rate, 2));
    await plan.settle();
  }
  const perRound = Math.max(1, Math.round(plan.seconds / plan.rounds));
  for (let round = 0; round < plan.rounds; round++) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      const sample = await openLoop(side.target, plan.rate, perRound);
      await plan.settle();
      assertOpenLoopClean(side.label, sample);
      side.samples.push(sample);
      const f = openLoopFigures(plan.rate, [sample]);
      plan.log(
        `  ${side.label.padEnd(24)} round ${round + 1}: ${plan.rate.toFixed(0)} req/s scheduled, p50 ${f.p50_ms.toFixed(2)} ms, p99 ${f.p99_ms.toFixed(2)} ms, p99.9 ${f.p999_ms.toFixed(2)} ms (send lag ≤ ${f.maxSendLagMs.toFixed(1)} ms)`,
      );
    }
  }
  const service = openLoopFigures(plan.rate, sides[0]!.samples);
  const baseline = openLoopFigures(plan.rate, sides[1]!.samples);
  const ratio = service.p99_ms / baseline.p99_ms;
  const row = (name: string, f: typeof service) => ({
    name,
    rps: null,
    rate: f.rate,
    p50_ms: f.p50_ms,
    p99_ms: f.p99_ms,
    p999_ms: f.p999_ms,
    samples: f.requests,
  });
  return [
    {
      ...row(plan.name, service),
      ratio_to_baseline: ratio,
      baseline: `${plan.name}-baseline (p99)`,
      target: 'p99 ≤ 2× baseline p99 at the same fixed rate',
      met: ratio <= 2,
    },
    { ...row(`${plan.name}-baseline`, baseline), ratio_to_baseline: 1 },
  ];
}
