import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO } from '../e2e/processes.ts';
import { dependencyDifferences, packageOf } from '../../scripts/dependencies/declared-imports.ts';

const run = promisify(execFile);

describe('package.json declares exactly what is imported', () => {
  it('holds for this repository (npm run check:deps, a part of npm run check)', async () => {
    expect(await dependencyDifferences(REPO)).toEqual([]);
  });

  it('names a package by its specifier: scoped, with a subpath, and not a file or a builtin', () => {
    expect(packageOf('typebox/compile')).toBe('typebox');
    expect(packageOf('@fastify/otel')).toBe('@fastify/otel');
    expect(packageOf('@aws-sdk/client-s3/dist/x.js')).toBe('@aws-sdk/client-s3');
    expect(packageOf('./pool.ts')).toBeUndefined();
    expect(packageOf('node:fs')).toBeUndefined();
    expect(packageOf('fs')).toBeUndefined();
  });
});

describe('the dependency check fails on every kind of difference', () => {
  let root: string;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'tenantry-declared-'));
    write(
      'package.json',
      JSON.stringify({
        scripts: { start: 'exec node main.ts', check: 'lint-tool . && node scripts/check.ts' },
        dependencies: {
          node: '^24.0.0',
          used: '^1.0.0',
          beside: '^1.0.0',
          unused: '^1.0.0',
          'tests-only': '^1.0.0',
          twice: '^1.0.0',
        },
        devDependencies: {
          'dev-at-runtime': '^1.0.0',
          'types-only': '^1.0.0',
          'lint-tool-package': '^1.0.0',
          '@types/used': '^1.0.0',
          'dev-unused': '^1.0.0',
          twice: '^1.0.0',
          '@vitest/coverage-v8': '^1.0.0',
          '@vitest/coverage-istanbul': '^1.0.0',
        },
      }),
    );
    // The programs the scripts run are found through the installed packages' `bin`.
    write('node_modules/node/package.json', JSON.stringify({ name: 'node', bin: { node: 'bin/node' } }));
    write(
      'node_modules/lint-tool-package/package.json',
      JSON.stringify({ name: 'lint-tool-package', bin: { 'lint-tool': 'bin.js' } }),
    );
    write('main.ts', "import { start } from './framework/start.ts';\nstart();\n");
    write(
      'framework/start.ts',
      [
        "import used from 'used/sub';",
        "import type { Shape } from 'types-only';",
        "import { helper } from '../scripts/helper.ts';",
        "export const start = async (s?: Shape) => { await import('missing-at-runtime'); return [used, helper, s]; };",
        "import 'dev-at-runtime';",
      ].join('\n'),
    );
    // A script file the production code loads is production code too.
    write('scripts/helper.ts', "import beside from 'beside';\nexport const helper = beside;\n");
    write('scripts/check.ts', "import tool from 'tests-only';\nexport default tool;\n");
    // Vitest loads the coverage provider its configuration names; the other one is used by nothing.
    write(
      'vitest.config.ts',
      "export default { test: { coverage: { include: ['framework/**'], provider: 'v8' } } };\n",
    );
    write('test/a.test.ts', "import 'undeclared-in-tests';\nimport 'tests-only';\n");
  });
  afterAll(() => {
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('reports each difference in a sentence, and nothing for what is declared right', async () => {
    expect(await dependencyDifferences(root)).toEqual([
      '@vitest/coverage-istanbul is in devDependencies but nothing imports it, and no npm script runs it: remove it',
      'dev-at-runtime is loaded at run time by framework/start.ts (production code) but is not in dependencies (it is in devDependencies)',
      'dev-unused is in devDependencies but nothing imports it, and no npm script runs it: remove it',
      'missing-at-runtime is loaded at run time by framework/start.ts (production code) but is not in dependencies',
      'tests-only is in dependencies but only development code imports it (scripts/check.ts): move it to devDependencies',
      'twice is in both dependencies and devDependencies',
      'undeclared-in-tests is imported by test/a.test.ts but is not declared: add it to devDependencies',
      'unused is in dependencies but nothing imports it: remove it',
    ]);
  });

  it('fails npm run check:deps with those lines', async () => {
    const failure = await run(
      process.execPath,
      ['--disable-warning=ExperimentalWarning', 'scripts/check-dependencies.ts', '--root', root],
      { cwd: REPO },
    ).then(
      () => undefined,
      (err: { code: number; stderr: string }) => err,
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stderr).toContain('package.json does not declare exactly what is imported:');
    expect(failure?.stderr).toContain('  unused is in dependencies but nothing imports it: remove it\n');
  });
});
