import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Vitest's own order (a file that failed last time first, then the longest last time, then the
 * largest: BaseSequencer), with the projects in this order before it: the slow files first and the
 * unit files last. On a clean clone vitest knows no durations, and file size says little of how
 * long a file takes: a 46 s file of 100 lines could start last and run alone at the end while the
 * other workers wait. Started first, the slow files overlap the rest of the run; the short unit
 * files fill the workers at its end. (vitest's documented `sequence.sequencer`, vitest.config.ts.)
 */
const PROJECT_ORDER = ['slow', 'integration', 'files on s3', 'unit'];

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const at = PROJECT_ORDER.indexOf(spec.project.name);
      return at === -1 ? PROJECT_ORDER.length : at;
    };
    // Array.prototype.sort is stable: within a project, vitest's order stands.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
