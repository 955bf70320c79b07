import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cycles, importsOf, sourceFiles, type ImportEdge } from '../helpers/import-graph.ts';

/**
 * The import rules (docs/architecture.md, "Import rules" and "Contracts"), by a scan of every
 * relative import:
 * - the framework imports no module: modules plug in through ModuleDefinition's extension points,
 *   and main.ts at the repository's root is the one place both meet;
 * - no file cycle, type imports included: the files import one way only, so each can be read
 *   from what it imports (a cycle among the imports Node loads would also make the load order
 *   decide which binding is still undefined; that rule is kept on its own for its message);
 * - the contracts (framework/contracts/, and the definition files define.ts gathers) import
 *   contracts only, never an implementation: what a module author writes against stands apart
 *   from what runs it;
 * - no cycle between modules, type imports included (a module depends on another one way only);
 * - a module reaches the admin shell through framework/admin/index.ts alone: none of the shell's
 *   other files, nor the form token's own (framework/access/form-token.ts, whose field and token the
 *   index gives pages), so a hand-written page uses the helpers the generated pages use.
 * The author API's types are recursive by nature (a module's hooks receive Services, whose
 * registry holds the modules); the files are not: contracts/composition.ts, above both, completes
 * the registry's type by declaration merging. There is no list of tolerated cycles: any cycle
 * fails. The modules' order today is auth -> notification -> user (auth also -> user); who owns
 * what between them is in docs/architecture.md, "Who owns what".
 */
const ROOT = resolve(import.meta.dirname, '../..');
const files = ['main.ts', 'framework', 'modules', 'scripts'].flatMap((dir) => sourceFiles(ROOT, dir));
const edges: ImportEdge[] = files.flatMap((file) => importsOf(ROOT, file));
const moduleOf = (file: string): string | undefined => /^modules\/([^/]+)\//.exec(file)?.[1];

/** The definition files: what a module declares, gathered by the author entry point define.ts. */
const DEFINITION_FILES = [
  'framework/entity/define.ts',
  'framework/entity/entity-definition.ts',
  'framework/entity/route-definition.ts',
  'framework/entity/module-definition.ts',
  'framework/entity/entity-values.ts',
  'framework/entity/field-text.ts',
  'framework/entity/storage.ts',
  'framework/entity/secret-field.ts',
];
const isContract = (file: string): boolean =>
  file.startsWith('framework/contracts/') || DEFINITION_FILES.includes(file);
/** What a module may not import of the admin shell: every file of it but its entry point, and the form token's. */
const ADMIN_ENTRY = 'framework/admin/index.ts';
const isAdminInternal = (file: string): boolean =>
  (file.startsWith('framework/admin/') && file !== ADMIN_ENTRY) || file === 'framework/access/form-token.ts';
/** The relative imports of these files that reach no contract, `from -> to`. */
const outsideContracts = (files: (file: string) => boolean): string[] =>
  edges.filter((e) => files(e.from) && !isContract(e.to)).map((e) => `${e.from} -> ${e.to}`);

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

  it('no cycle among the files, type imports included', () => {
    expect(cycles(edges).map((c) => c.join(' -> '))).toEqual([]);
  });

  it('the definition files import only contracts', () => {
    expect(DEFINITION_FILES.filter((file) => !files.includes(file))).toEqual([]);
    expect(outsideContracts((file) => DEFINITION_FILES.includes(file))).toEqual([]);
  });

  it('the contracts (framework/contracts/) import no implementation', () => {
    expect(edges.filter((e) => e.from.startsWith('framework/contracts/')).length).toBeGreaterThan(5);
    expect(outsideContracts((file) => file.startsWith('framework/contracts/'))).toEqual([]);
  });

  it('a module imports the admin shell through framework/admin/index.ts only, its form token included', () => {
    expect(edges.filter((e) => moduleOf(e.from) && e.to === ADMIN_ENTRY).length).toBeGreaterThan(5);
    const reaching = edges.filter((e) => moduleOf(e.from) && isAdminInternal(e.to)).map((e) => `${e.from} -> ${e.to}`);
    expect(reaching).toEqual([]);
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
