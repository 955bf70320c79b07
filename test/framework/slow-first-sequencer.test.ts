import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LONGEST, longestFirst } from '../helpers/slow-first-sequencer.ts';

// The suite's longest files start first: on a clean clone vitest orders files by size, and the
// walks of every admin page are small files (their walk is test/browser/every-page.ts) that take
// minutes, so started last they would end the run alone.

const ROOT = join(import.meta.dirname, '../..');
const spec = (path: string) => ({ moduleId: join(ROOT, path) });

describe('the slow-first sequencer', () => {
  it('starts the longest files first, in their order, and keeps the others’ order', () => {
    const files = [
      spec('test/browser/admin-shell.test.ts'),
      spec('test/browser/admin-every-page-operator.test.ts'),
      spec('test/e2e/several-processes.test.ts'),
      spec('test/browser/admin-every-page.test.ts'),
      spec('test/browser/admin-axe.test.ts'),
    ];
    expect(longestFirst(files).map((f) => f.moduleId.slice(ROOT.length + 1))).toEqual([
      'test/browser/admin-every-page.test.ts',
      'test/browser/admin-every-page-operator.test.ts',
      'test/browser/admin-shell.test.ts',
      'test/e2e/several-processes.test.ts',
      'test/browser/admin-axe.test.ts',
    ]);
  });

  it('names files that exist (a renamed file would silently start last again)', () => {
    expect(LONGEST.filter((path) => !existsSync(join(ROOT, path)))).toEqual([]);
  });
});
