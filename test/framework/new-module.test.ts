import { afterAll, describe, expect, inject, it } from 'vitest';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../../framework/app.ts';

const run = promisify(execFile);

/**
 * `npm run new:module` in a copy of the repository (the code, the migrations, the test helpers and
 * the conformance suite; node_modules linked): the scaffolded module, registered as the command
 * says, passes its own test (routes, OpenAPI, catalog, admin page) and the conformance suite, with
 * no hand edit. One vitest run inside the copy, on this run's PostgreSQL server.
 */
const COPIED = [
  'framework',
  'modules',
  'migrations',
  'templates',
  'scripts',
  'package.json',
  'tsconfig.json',
  'vitest.config.ts',
  'config.yaml',
  'biome.jsonc',
];
const COPIED_TESTS = ['helpers', 'conformance', 'fixtures'];

let copy: string | undefined;
afterAll(() => {
  if (copy) rmSync(copy, { recursive: true, force: true });
});

/** Registers the module as the command's output says: its import, and its entry in allModules. */
function register(source: string, importLine: string, entry: string): string {
  const lines = source.split('\n');
  const lastImport = lines.findLastIndex((line) => line.startsWith('import '));
  lines.splice(lastImport + 1, 0, importLine);
  const registered = lines.join('\n').replace(/(export const allModules\b[^=]*=\s*\[[^\]]*?)\s*\]/, `$1, ${entry}]`);
  expect(registered, 'allModules found in modules/index.ts').not.toBe(lines.join('\n'));
  return registered;
}

describe('npm run new:module', () => {
  it('scaffolds a working module: its test and the conformance suite pass with no hand edit', {
    timeout: 600_000,
  }, async () => {
    copy = mkdtempSync(join(tmpdir(), 'tenantry-scaffold-'));
    for (const entry of COPIED) cpSync(join(ROOT, entry), join(copy, entry), { recursive: true });
    mkdirSync(join(copy, 'test'));
    for (const entry of COPIED_TESTS) cpSync(join(ROOT, 'test', entry), join(copy, 'test', entry), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
    const env = {
      ...process.env,
      TEST_DATABASE_URL: inject('pgAdminUrl'),
      PATH: `${join(ROOT, 'node_modules/.bin')}:${process.env.PATH ?? ''}`,
    };

    const scaffold = await run(process.execPath, ['scripts/new-module.ts', 'stockroom', '--entity', 'item'], {
      cwd: copy,
      env,
    });
    for (const file of [
      'modules/stockroom/index.ts',
      'modules/stockroom/item.entity.ts',
      'migrations/stockroom/0001_items.sql',
      'test/modules/stockroom/item.test.ts',
    ]) {
      expect(existsSync(join(copy, file)), file).toBe(true);
      expect(scaffold.stdout).toContain(`wrote ${file}`);
    }
    expect(readFileSync(join(copy, 'migrations/stockroom/0001_items.sql'), 'utf8')).toContain(
      "call make_tenant_table('items');",
    );
    const importLine = /^ {2}(import \{ stockroomModule \} from '\.\/stockroom\/index\.ts';)$/m.exec(
      scaffold.stdout,
    )?.[1];
    expect(importLine, scaffold.stdout).toBeDefined();
    expect(scaffold.stdout).toContain('add stockroomModule to allModules in modules/index.ts');
    // Issue 50, point 6: every next step is printed, and the files hold what the docs teach.
    for (const step of [
      'npm run migration:new -- stockroom',
      'npm run openapi:accept',
      'npm run client',
      'test/conformance test/security',
      'npm run check',
    ])
      expect(scaffold.stdout).toContain(step);
    const entitySource = readFileSync(join(copy, 'modules/stockroom/item.entity.ts'), 'utf8');
    expect(entitySource).toContain("unique: [{ field: 'name', message: 'An item with this name already exists' }]");
    expect(entitySource).toContain('fieldText: itemFieldText');
    expect(readFileSync(join(copy, 'modules/stockroom/index.ts'), 'utf8')).toMatch(
      /sidebar: \[\{ label: 'Items', path: '\/admin\/stockroom\/items'/,
    );
    // Laid out as npm run check wants them: formatted and linted clean.
    const biome = await run(
      join(ROOT, 'node_modules/.bin/biome'),
      ['check', '--error-on-warnings', 'modules/stockroom', 'test/modules/stockroom'],
      { cwd: copy, env },
    ).catch((err: { code: number; stdout: string; stderr: string }) => err);
    expect('code' in biome ? biome.code : 0, `${biome.stdout}\n${biome.stderr}`).toBe(0);
    const testSource = readFileSync(join(copy, 'test/modules/stockroom/item.test.ts'), 'utf8');
    expect(testSource).toContain('useTestApp(');
    expect(testSource).not.toContain('startTestApp');

    const index = join(copy, 'modules/index.ts');
    writeFileSync(index, register(readFileSync(index, 'utf8'), importLine!, 'stockroomModule'));

    // A second scaffold of the same name is refused and writes nothing.
    const again = await run(process.execPath, ['scripts/new-module.ts', 'stockroom'], { cwd: copy, env }).catch(
      (err: { code: number; stderr: string }) => err,
    );
    expect(again).toMatchObject({ code: 2, stderr: expect.stringContaining('module stockroom is registered already') });

    const vitest = join(ROOT, 'node_modules/vitest/vitest.mjs');
    const tests = await run(
      process.execPath,
      [
        vitest,
        'run',
        'test/modules/stockroom',
        'test/conformance/entities.test.ts',
        '-t',
        'stockroom',
        '--typecheck.enabled=false',
        '--reporter=verbose',
      ],
      {
        cwd: copy,
        env: { ...env, FORCE_COLOR: '0', NO_COLOR: '1' },
        maxBuffer: 64 * 1024 * 1024,
      },
    ).catch((err: { code: number; stdout: string; stderr: string }) => err);
    const output = `${tests.stdout}\n${tests.stderr}`;
    expect('code' in tests ? tests.code : 0, output).toBe(0);
    expect(output).toMatch(/entity stockroom\.item/);
    expect(output).toMatch(/Tests\s+\d+ passed/);
    expect(output).not.toMatch(/failed/);
  });
});
