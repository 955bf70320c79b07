import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cycles, importsOf, sourceFiles, type ImportEdge } from '../helpers/import-graph.ts';

/**
 * The import rules (docs/architecture.md, "Import rules"), by a scan of every relative import:
 * - the framework imports no module: modules plug in through ModuleDefinition's extension points,
 *   and main.ts at the repository's root is the one place both meet;
 * - no file cycle among the imports Node loads (a cycle makes the load order decide which
 *   binding is still undefined);
 * - no cycle between modules, type imports included (a module depends on another one way only).
 * Type-only imports are left out of the file rule on purpose: `import type` is erased before Node
 * loads the file (tsconfig's verbatimModuleSyntax and erasableSyntaxOnly guarantee it), and the
 * author API's types are mutually recursive by nature (a module's hooks receive Services, whose
 * Registry holds the modules).
 * There is no list of tolerated cycles: any cycle fails. The modules' order today is
 * auth -> notification -> user (auth also -> user); who owns what between them is in
 * docs/architecture.md, "Who owns what".
 */
const ROOT = resolve(import.meta.dirname, '../..');
const edges: ImportEdge[] = ['main.ts', 'framework', 'modules', 'scripts']
  .flatMap((dir) => sourceFiles(ROOT, dir))
  .flatMap((file) => importsOf(ROOT, file));
const moduleOf = (file: string): string | undefined => /^modules\/([^/]+)\//.exec(file)?.[1];

describe('import rules', () => {
  it('scans the whole code base', () => {
    expect(edges.length).toBeGreaterThan(500);
    expect(edges.some((e) => e.from === 'main.ts' && e.to === 'modules/index.ts')).toBe(true);
  });

  it('the framework imports no module, not even a type', () => {
    const reaching = edges
      .filter((e) => e.from.startsWith('framework/') && e.to.startsWith('modules/'))
      .map((e) => `${e.from} -> ${e.to}`);
    expect(reaching).toEqual([]);
  });

  it('no cycle among the files Node loads', () => {
    expect(cycles(edges.filter((e) => !e.typeOnly)).map((c) => c.join(' -> '))).toEqual([]);
  });

  it('no cycle between modules, type imports included', () => {
    const between = edges.flatMap((e) => {
      const from = moduleOf(e.from);
      const to = moduleOf(e.to);
      return from && to && from !== to ? [{ from, to }] : [];
    });
    expect(cycles(between).map((c) => c.join(' <-> '))).toEqual([]);
  });
});

describe('the cycle finder', () => {
  it('finds a cycle, a self-import and none in a chain', () => {
    expect(
      cycles([
        { from: 'a', to: 'b' },
        { from: 'b', to: 'c' },
        { from: 'c', to: 'a' },
        { from: 'c', to: 'd' },
      ]),
    ).toEqual([['a', 'b', 'c']]);
    expect(cycles([{ from: 'a', to: 'a' }])).toEqual([['a']]);
    expect(
      cycles([
        { from: 'a', to: 'b' },
        { from: 'b', to: 'c' },
      ]),
    ).toEqual([]);
  });
});
