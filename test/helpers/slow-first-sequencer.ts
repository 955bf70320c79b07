import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The order files start in (vitest's documented `sequence.sequencer`, vitest.config.ts): the slow
 * files early, spread through the first part of the integration files, and the unit files last.
 *
 * On a clean clone vitest knows no durations and orders files by size, which says little of how
 * long a file takes: the baseline run started new-module.test.ts (46 s, 100 lines) 469 s into a
 * 582 s run. Started early, a slow file overlaps the rest of the run; the short unit files fill the
 * workers at its end. Spread rather than all at once: most slow files start processes or a browser
 * of their own, and three of them side by side would crowd two cores while the workers' own
 * share waits.
 *
 * Within each project, vitest's own order stands (BaseSequencer: a file that failed last time
 * first, then the longest last time, then the largest).
 */
/** The slow projects: `slow` and `slow, own process` (vitest.config.ts). */
const SLOW = 'slow';
/**
 * The slow files that take longest by far (the new-module acceptance test, a copy of the repository
 * with its check and two vitest runs inside it; each walk of every admin page: minutes, where the
 * next slow file takes under one), started first whatever vitest knows: on a clean clone vitest
 * orders by file size, and the walks are small files (the walk is test/browser/every-page.ts), so
 * they would start last and end the run alone.
 */
export const LONGEST = [
  'test/e2e/new-module-acceptance.test.ts',
  'test/browser/admin-every-page.test.ts',
  'test/browser/admin-every-page-operator.test.ts',
];

/** The files LONGEST names first, in its order, then the others as they came. */
export function longestFirst<T extends { moduleId: string }>(files: readonly T[], longest = LONGEST): T[] {
  const rank = (file: T) => {
    const i = longest.findIndex((path) => file.moduleId.endsWith(`/${path}`));
    return i === -1 ? longest.length : i;
  };
  return [...files].sort((a, b) => rank(a) - rank(b));
}
const LAST = 'unit';
/** The slow files are spread through this share of the other files, from the start. */
const SPREAD = 0.6;

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const isSlow = (spec: TestSpecification) => spec.project.name.startsWith(SLOW);
    const slow = longestFirst(sorted.filter(isSlow));
    const last = sorted.filter((spec) => spec.project.name === LAST);
    const rest = sorted.filter((spec) => !isSlow(spec) && spec.project.name !== LAST);
    const order: TestSpecification[] = [];
    const gap = slow.length ? (rest.length * SPREAD) / slow.length : 0;
    let next = 0;
    slow.forEach((spec, i) => {
      const upTo = Math.round(i * gap);
      while (next < upTo && next < rest.length) order.push(rest[next++]!);
      order.push(spec);
    });
    order.push(...rest.slice(next), ...last);
    return order;
  }
}
