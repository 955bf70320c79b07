import { execFileSync } from 'node:child_process';
import { expect, it } from 'vitest';
import { startNodeOptions } from '../../scripts/start-options.ts';

/**
 * Issue 45, point 9: a web process holds 2,000 open streams beside 200 creates a second under
 * 300 MiB of RSS. Without a cap on its old generation, V8 on a machine with a lot of memory lets
 * the old space grow to several times what is live before collecting it, and the process read
 * 300-311 MiB there (275-287 already at 10 streams: the create load's heap, not the streams);
 * capped at 1 GiB, 256 MiB in two runs (docs/performance.md, "Live streams").
 */
const CAP_MIB = 1024;

it('starts a web process with its old generation capped at 1 GiB', () => {
  const options = startNodeOptions('start:web');
  expect(options).toContain(`--max-old-space-size=${CAP_MIB}`);
  // The option takes effect: V8's heap limit is the cap plus the young generation, not the
  // machine's default (several GiB here).
  const limit = Number(
    execFileSync(process.execPath, [...options, '-p', "require('node:v8').getHeapStatistics().heap_size_limit"], {
      encoding: 'utf8',
    }).trim(),
  );
  expect(limit / 2 ** 20).toBeGreaterThanOrEqual(CAP_MIB);
  expect(limit / 2 ** 20).toBeLessThan(CAP_MIB + 128);
});

it('leaves the other roles as they were: their bounds were measured without the cap', () => {
  for (const script of ['start', 'start:worker'] as const)
    expect(startNodeOptions(script).some((option) => option.startsWith('--max-old-space-size'))).toBe(false);
});
