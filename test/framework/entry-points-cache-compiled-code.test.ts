import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importsOf, sourceFiles } from '../helpers/import-graph.ts';

/**
 * Every entry point that builds the app turns on Node's compile cache before it loads the app
 * (framework/compile-cache.ts; docs/performance.md, "What a process costs before it is ready"):
 * main.ts imports nothing else statically (a static import is compiled before any code runs), and
 * each npm script whose program reaches framework/app.ts, by static or dynamic imports, runs it
 * with `node --import ./framework/compile-cache.ts`.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const CACHE_IMPORT = '--import ./framework/compile-cache.ts';
const files = ['main.ts', 'framework', 'modules', 'scripts'].flatMap((dir) => sourceFiles(ROOT, dir));
const loads = new Map<string, string[]>();
for (const edge of files.flatMap((file) => importsOf(ROOT, file))) {
  if (!edge.typeOnly) loads.set(edge.from, [...(loads.get(edge.from) ?? []), edge.to]);
}
const reachesApp = (from: string): boolean => {
  const seen = new Set<string>();
  const pending = [from];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (file === 'framework/app.ts') return true;
    if (seen.has(file)) continue;
    seen.add(file);
    pending.push(...(loads.get(file) ?? []));
  }
  return false;
};
const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
  .scripts;
/** Each `node [options] scripts/x.ts` in a script's command: the script, the program and the options before it. */
const nodeRuns = Object.entries(scripts).flatMap(([name, command]) =>
  [...command.matchAll(/\bnode ((?:--\S+(?: \.\/\S+)? )*)(scripts\/\S+\.ts)/g)].map((m) => ({
    name,
    program: m[2]!,
    options: m[1]!.trim(),
  })),
);

describe('entry points cache what Node compiled', () => {
  it('main.ts imports only the compile cache statically, then the service', () => {
    const edges = importsOf(ROOT, 'main.ts').filter((e) => !e.typeOnly);
    const text = readFileSync(join(ROOT, 'main.ts'), 'utf8');
    const staticImports = [...text.matchAll(/^import\s[^;]*?['"]([^'"]+)['"]/gm)].map((m) => m[1]);
    expect(staticImports).toEqual(['./framework/compile-cache.ts']);
    expect(edges.map((e) => e.to).sort()).toEqual([
      'framework/compile-cache.ts',
      'framework/main.ts',
      'modules/index.ts',
    ]);
  });

  it('every npm command that builds the app runs with the compile cache imported first', () => {
    const building = nodeRuns.filter((run) => reachesApp(run.program));
    expect(building.map((run) => run.name)).toEqual(expect.arrayContaining(['admin:invite', 'job', 'openapi:export']));
    expect(building.filter((run) => run.options !== CACHE_IMPORT).map((run) => `${run.name}: ${run.program}`)).toEqual(
      [],
    );
  });

  it('importing framework/compile-cache.ts turns the cache on', () => {
    const script = `await import('./framework/compile-cache.ts'); const { getCompileCacheDir } = await import('node:module'); process.stdout.write(String(getCompileCacheDir()))`;
    const env = { ...process.env };
    delete env.NODE_DISABLE_COMPILE_CACHE;
    const result = spawnSync(join(ROOT, 'node_modules/.bin/node'), ['--input-type=module', '-e', script], {
      cwd: ROOT,
      env,
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(result.stderr).toBe('');
    // The cache's directory; undefined when the cache is off.
    expect(result.stdout).toMatch(/^\/.+/);
  });
});
