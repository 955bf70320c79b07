/**
 * package.json declares exactly what is imported. The rules, over the TypeScript sources of the
 * repository (main.ts, framework/, modules/, scripts/, test/, tools/ and the config files at the root):
 * - a package the production code loads at run time is in `dependencies`;
 * - every other package imported (by tests, benches, tools, or only for its types) is declared,
 *   in `devDependencies` or in `dependencies`;
 * - a package in `dependencies` is loaded at run time by the production code, or is the program a
 *   production npm script runs (the pinned `node`); one that is not is a difference, to remove or to
 *   move to `devDependencies`;
 * - a package in `devDependencies` is imported somewhere, is the program an npm script runs (tsc,
 *   biome, redocly, vitest), is a plugin such a program loads by the name its configuration gives
 *   (vitest's coverage provider), or is the `@types/` of a package imported;
 * - no package is in both.
 * A workspace (tools/client-gen) declares its own imports in its own package.json.
 *
 * The production code is what runs where the service runs: main.ts, framework/, modules/ and the
 * operator commands (PRODUCTION_SCRIPTS), with every file they import, followed from file to file.
 * What Node loads is read from the source with its types stripped, as Node strips them
 * (module.stripTypeScriptTypes): an `import type` loads nothing, so a package imported only for its
 * types is a development dependency.
 */
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { builtinModules, stripTypeScriptTypes } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { init, parse } from 'es-module-lexer';

/** The npm scripts that run where the service runs, and the files they start. */
export const PRODUCTION_SCRIPTS: Readonly<Record<string, string>> = {
  start: 'main.ts',
  'start:web': 'main.ts',
  'start:worker': 'main.ts',
  'admin:invite': 'scripts/admin-invite.ts',
  job: 'scripts/job.ts',
  'dead-letters': 'scripts/dead-letters.ts',
  'migration:new': 'scripts/migration-new.ts',
  'db:reset': 'scripts/db-reset.ts',
};

/** Where the sources are, from the repository's root. */
const SOURCE_DIRS = ['framework', 'modules', 'scripts', 'test', 'tools'];
/** Whole production trees: everything in them may run in the service. */
const PRODUCTION_DIRS = ['framework', 'modules'];
const SKIPPED_DIRS = new Set(['node_modules', '.git', 'data', 'coverage']);

interface PackageJson {
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  scripts?: Record<string, string>;
  workspaces?: string[];
}

interface FileImports {
  /** Packages Node loads with the file (static and dynamic imports, `require.resolve`). */
  runtime: Set<string>;
  /** Packages named in the file's imports at all, types included. */
  all: Set<string>;
  /** Other files of the repository the file loads. */
  files: Set<string>;
}

const builtins = new Set(builtinModules);

/** The package a bare specifier names (`@scope/name/sub` → `@scope/name`), or undefined for a file or a builtin. */
export function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('#')) return undefined;
  if (specifier.startsWith('node:')) return undefined;
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
  return builtins.has(name) ? undefined : name;
}

/** The specifiers of a module's imports (static, dynamic with a literal, re-exports), TypeScript's type-only ones included. */
function specifiers(code: string): string[] {
  const [imports] = parse(code);
  const out: string[] = [];
  for (const entry of imports)
    if ('specifier' in entry && typeof entry.specifier === 'string' && !('glob' in entry && entry.glob))
      out.push(entry.specifier);
  return out;
}

// A package resolved by name rather than imported: its files are read (the admin shell serves htmx's).
const RESOLVED = /\b(?:require|import\.meta)\.resolve\(\s*(['"])([^'"]+)\1/g;

function readImports(file: string): FileImports {
  const source = readFileSync(file, 'utf8');
  const stripped = stripTypeScriptTypes(source);
  const runtime = new Set<string>();
  const all = new Set<string>();
  const files = new Set<string>();
  for (const specifier of specifiers(stripped)) {
    const name = packageOf(specifier);
    if (name) runtime.add(name);
    else if (specifier.startsWith('.')) files.add(resolve(dirname(file), specifier));
  }
  for (const match of stripped.matchAll(RESOLVED)) {
    const name = packageOf(match[2]!);
    if (name) runtime.add(name);
  }
  // The source as written: the lexer reads TypeScript, type-only imports included.
  for (const specifier of specifiers(source)) {
    const name = packageOf(specifier);
    if (name) all.add(name);
  }
  for (const name of runtime) all.add(name);
  return { runtime, all, files };
}

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    if (SKIPPED_DIRS.has(entry)) continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (/\.(m|c)?ts$/.test(entry) && !entry.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** The programs the npm scripts run by name (`tsc`, `biome`, `node`, ...), per script. */
function scriptPrograms(scripts: Record<string, string>): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const [name, line] of Object.entries(scripts)) {
    const programs = new Set<string>();
    for (const command of line.split(/&&|\|\||;|\|/)) {
      const words = command
        .trim()
        .split(/\s+/)
        .filter((w) => w !== 'exec' && !/^[A-Z_]+=/.test(w));
      if (words[0]) programs.add(words[0]);
    }
    out.set(name, programs);
  }
  return out;
}

/** Which installed package provides each program (its package.json `bin`). */
function programProviders(root: string, declared: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const name of declared) {
    const file = join(root, 'node_modules', name, 'package.json');
    if (!existsSync(file)) continue;
    const bin = (JSON.parse(readFileSync(file, 'utf8')) as { bin?: string | Record<string, string> }).bin;
    if (typeof bin === 'string') out.set(name.split('/').pop()!, name);
    else for (const program of Object.keys(bin ?? {})) out.set(program, name);
  }
  return out;
}

// Vitest loads its coverage provider by name: `coverage: { provider: 'v8' }` loads @vitest/coverage-v8.
const COVERAGE_PROVIDER = /\bcoverage\s*:\s*\{[^}]*?\bprovider\s*:\s*(['"])(v8|istanbul)\1/g;

/** The packages the programs the scripts run load by the names their configuration files at the root give. */
function configuredPlugins(root: string): Set<string> {
  const out = new Set<string>();
  for (const file of readdirSync(root).filter((f) => /^vitest\.config\.(m|c)?[jt]s$/.test(f)))
    for (const match of readFileSync(join(root, file), 'utf8').matchAll(COVERAGE_PROVIDER))
      out.add(`@vitest/coverage-${match[2]}`);
  return out;
}

/** Every difference between what package.json declares and what the sources import, one sentence each. */
export async function dependencyDifferences(root: string): Promise<string[]> {
  await init;
  const rootPackage = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as PackageJson;
  const dependencies = new Set(Object.keys(rootPackage.dependencies ?? {}));
  const devDependencies = new Set(Object.keys(rootPackage.devDependencies ?? {}));
  const workspaces = (rootPackage.workspaces ?? []).map((w) => resolve(root, w));

  const files = [
    ...readdirSync(root)
      .filter((f) => /\.(m|c)?ts$/.test(f) && !f.endsWith('.d.ts'))
      .map((f) => join(root, f)),
    ...SOURCE_DIRS.flatMap((d) => sourceFiles(join(root, d))),
  ];
  const imports = new Map(files.map((f) => [f, readImports(f)]));
  const at = (file: string) => relative(root, file);

  // The production code: its trees and entry points, and every file they load, followed.
  const production = new Set<string>();
  const pending = [
    ...files.filter((f) => PRODUCTION_DIRS.some((d) => at(f).startsWith(`${d}/`))),
    ...Object.values(PRODUCTION_SCRIPTS).map((f) => join(root, f)),
  ];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (production.has(file) || !imports.has(file)) continue;
    production.add(file);
    pending.push(...imports.get(file)!.files);
  }

  const differences: string[] = [];
  const firstImporter = new Map<string, string>();
  const loadedInProduction = new Map<string, string>();
  const importedAnywhere = new Set<string>();
  for (const [file, found] of imports) {
    const workspace = workspaces.find((w) => file.startsWith(`${w}/`));
    if (workspace) {
      const own = JSON.parse(readFileSync(join(workspace, 'package.json'), 'utf8')) as PackageJson;
      const declared = new Set([...Object.keys(own.dependencies ?? {}), ...Object.keys(own.devDependencies ?? {})]);
      for (const name of found.all)
        if (!declared.has(name))
          differences.push(
            `${at(file)} imports ${name}, which ${at(join(workspace, 'package.json'))} does not declare`,
          );
      continue;
    }
    for (const name of found.all) {
      importedAnywhere.add(name);
      if (!firstImporter.has(name)) firstImporter.set(name, at(file));
    }
    if (production.has(file))
      for (const name of found.runtime) if (!loadedInProduction.has(name)) loadedInProduction.set(name, at(file));
  }

  for (const [name, file] of loadedInProduction)
    if (!dependencies.has(name))
      differences.push(
        `${name} is loaded at run time by ${file} (production code) but is not in dependencies${devDependencies.has(name) ? ' (it is in devDependencies)' : ''}`,
      );
  for (const name of importedAnywhere)
    if (!dependencies.has(name) && !devDependencies.has(name) && !loadedInProduction.has(name))
      differences.push(
        `${name} is imported by ${firstImporter.get(name)} but is not declared: add it to devDependencies`,
      );

  const programs = scriptPrograms(rootPackage.scripts ?? {});
  const providers = programProviders(root, [...dependencies, ...devDependencies]);
  const runBy = (scripts: Iterable<string>) =>
    new Set([...scripts].flatMap((s) => [...(programs.get(s) ?? [])].map((p) => providers.get(p) ?? '')));
  const productionPrograms = runBy(Object.keys(PRODUCTION_SCRIPTS));
  const anyPrograms = runBy(programs.keys());
  const plugins = configuredPlugins(root);

  for (const name of dependencies) {
    if (devDependencies.has(name)) differences.push(`${name} is in both dependencies and devDependencies`);
    else if (!loadedInProduction.has(name) && !productionPrograms.has(name))
      differences.push(
        importedAnywhere.has(name)
          ? `${name} is in dependencies but only development code imports it (${firstImporter.get(name)}): move it to devDependencies`
          : `${name} is in dependencies but nothing imports it: remove it`,
      );
  }
  for (const name of devDependencies) {
    if (dependencies.has(name)) continue; // said once, above
    const typed = name.startsWith('@types/')
      ? name.slice('@types/'.length).replace(/^(.+)__(.+)$/, '@$1/$2')
      : undefined;
    const used =
      importedAnywhere.has(name) ||
      anyPrograms.has(name) ||
      plugins.has(name) ||
      (typed !== undefined && (typed === 'node' || importedAnywhere.has(typed) || loadedInProduction.has(typed)));
    if (!used)
      differences.push(`${name} is in devDependencies but nothing imports it, and no npm script runs it: remove it`);
  }
  return differences.sort();
}
