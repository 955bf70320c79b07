import { execFile } from 'node:child_process';
import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * `npm run check` by mutation (issue 28): a type error planted in a module fails the type check,
 * and the same run without it passes. The plant goes into a copy of modules/ in a temporary
 * directory, never into the repository's own tree: the rest of the repository is linked in, so the
 * run checks exactly what `npm run check:types` checks, with one module file changed.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);
/** The module file the plant goes into, and the line planted at its end. */
const TARGET = join('modules', 'content', 'slug.ts');
const PLANT = "\nexport const plantedByCheckTest: number = 'not a number';\n";

function workspace(plant: boolean): string {
  const dir = mkdtempSync(join(tmpdir(), 'tenantry-check-'));
  for (const name of [
    'main.ts',
    'framework',
    'scripts',
    'test',
    'client',
    'tools',
    'node_modules',
    'vitest.config.ts',
    'tsconfig.json',
    'package.json',
  ]) {
    symlinkSync(join(ROOT, name), join(dir, name));
  }
  cpSync(join(ROOT, 'modules'), join(dir, 'modules'), { recursive: true });
  if (plant) appendFileSync(join(dir, TARGET), PLANT);
  return dir;
}

/** `npm run check:types` in dir: its exit code and output. */
async function checkTypes(dir: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run('npm', ['run', '--silent', 'check:types'], {
      cwd: dir,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, output: stdout + stderr };
  } catch (err) {
    const failed = err as { code?: number; stdout?: string; stderr?: string };
    return {
      code: typeof failed.code === 'number' ? failed.code : 1,
      output: `${failed.stdout ?? ''}${failed.stderr ?? ''}`,
    };
  }
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('npm run check', () => {
  it('runs the type check and the linter, and CI runs it', () => {
    const scripts = (
      JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    ).scripts;
    expect(scripts.check).toContain('check:types');
    expect(scripts.check).toContain('check:lint');
    expect(scripts['check:types']).toMatch(/^tsc --noEmit/);
    expect(scripts['check:lint']).toMatch(/^biome check/);
    expect(readFileSync(join(ROOT, '.ci', 'run'), 'utf8')).toMatch(/npm run check\n/);
    const tsconfig = JSON.parse(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8')) as { include: string[] };
    expect(tsconfig.include).toEqual(expect.arrayContaining(['framework', 'modules', 'scripts', 'test']));
  });

  it('fails on a type error planted in a module, and passes without it', { timeout: 240_000 }, async () => {
    const planted = workspace(true);
    dirs.push(planted);
    const withPlant = await checkTypes(planted);
    expect(withPlant.code).not.toBe(0);
    // The planted error is the only one the check reports: without it the same run finds nothing
    // and passes. One type check of the whole repository instead of two (the second one, of the
    // unchanged tree, is what CI's own `npm run check` is).
    const errors = withPlant.output.split('\n').filter((line) => /error TS\d+/.test(line));
    expect(errors, withPlant.output).toHaveLength(1);
    expect(errors[0]).toContain(TARGET);
    expect(errors[0]).toMatch(/TS2322/);
  });
});
