import { send } from './http.ts';
import type { ResultRow } from './report.ts';

/** Creates per side of the batch scenario: one batch's worth. */
export const BATCH_CREATES = 100;

const CREATE_PATH = '/api/v1/testkit/widgets';
const widget = (run: string, n: number) => ({
  name: `batch-${run}-${n}`,
  size: 7,
  color: 'blue',
  note: 'created by the batch bench',
});

/**
 * Issue 48, point 3: 100 creates as one POST /api/v1/batch beside the same 100 creates sent one
 * after another on one connection (each its own request, transaction and commit), against the same
 * service in the same run. Each round times both sides, alternating which goes first; the figure is
 * the median round's singles time over its batch time (target ≥ 5×).
 */
export async function measureBatchGroup(options: {
  port: number;
  host: string;
  cookie: string;
  rounds: number;
  log: (line: string) => void;
}): Promise<ResultRow[]> {
  const { port, host, cookie, log } = options;
  const headers = { cookie };
  const singles = async (run: string) => {
    const started = performance.now();
    for (let n = 0; n < BATCH_CREATES; n++) {
      const answer = await send(port, { method: 'POST', path: CREATE_PATH, host, headers, json: widget(run, n) });
      if (answer.status !== 201) throw new Error(`a single create answered ${answer.status}: ${answer.body}`);
    }
    return performance.now() - started;
  };
  const batch = async (run: string) => {
    const requests = Array.from({ length: BATCH_CREATES }, (_, n) => ({
      method: 'POST',
      path: CREATE_PATH,
      body: widget(run, n),
    }));
    const answer = await send(port, { method: 'POST', path: '/api/v1/batch', host, headers, json: { requests } });
    if (answer.status !== 200) throw new Error(`the batch answered ${answer.status}: ${answer.body}`);
    return answer.ms;
  };
  // A warm-up of each side, not counted.
  await singles('warm-s');
  await batch('warm-b');
  const rounds: { singles: number; batch: number }[] = [];
  for (let round = 0; round < Math.max(3, options.rounds); round++) {
    const tag = `r${round}-${Date.now().toString(36)}`;
    const first = round % 2 === 0;
    const s1 = first ? await singles(`${tag}-s`) : undefined;
    const b = await batch(`${tag}-b`);
    const s = s1 ?? (await singles(`${tag}-s`));
    rounds.push({ singles: s, batch: b });
    log(
      `  round ${round + 1}: ${BATCH_CREATES} single creates ${s.toFixed(1)} ms, one batch ${b.toFixed(1)} ms (${(s / b).toFixed(1)}×)`,
    );
  }
  const ratios = rounds.map((r) => r.singles / r.batch).sort((a, b) => a - b);
  const median = ratios[Math.floor(ratios.length / 2)]!;
  const middle = rounds.find((r) => r.singles / r.batch === median)!;
  return [
    {
      name: 'batch-100-creates',
      rps: (BATCH_CREATES * 1000) / middle.batch,
      p50_ms: middle.batch,
      p99_ms: null,
      ratio_to_baseline: median,
      baseline: `${BATCH_CREATES} single creates one after another (${middle.singles.toFixed(1)} ms)`,
      target: '≥ 5× faster than 100 single creates',
      met: median >= 5,
      samples: rounds.length,
    },
  ];
}
