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
const SLOW = 'slow';
const LAST = 'unit';
/** The slow files are spread through this share of the other files, from the start. */
const SPREAD = 0.6;

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const slow = sorted.filter((spec) => spec.project.name === SLOW);
    const last = sorted.filter((spec) => spec.project.name === LAST);
    const rest = sorted.filter((spec) => spec.project.name !== SLOW && spec.project.name !== LAST);
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
