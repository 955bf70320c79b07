/**
 * npm run new:module -- <name> [--entity <name>] [--config config.yaml]
 *
 * Scaffolds a working module: modules/<name>/ (index.ts, one entity with a few example fields and
 * a command, its derived query type), its first migration generated from the definition
 * (migrations/<name>/0001_<plural>.sql, as `npm run migration:new` writes it) and a test file
 * (test/modules/<name>/<entity>.test.ts). The entity is named like the module unless --entity
 * says otherwise. Its routes, OpenAPI operations, catalog entry, admin pages and the conformance
 * suite work with no edit; registering the module in modules/index.ts takes one entry (and its
 * import), which the command prints. Nothing is left behind when a step fails.
 * Exits 2 on a usage error (a bad or taken name), 1 on a failure.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { ModuleDefinition } from '../framework/entity/define.ts';
import type { Config } from '../framework/config/schema.ts';
import { newMigration, UsageError } from './migration-new.ts';
import { registration, scaffoldFiles, scaffoldNames } from './scaffold/module-files.ts';

const USAGE = 'usage: npm run new:module -- <name> [--entity <name>] [--config config.yaml]';
const ROOT = resolve(import.meta.dirname, '..');
const BIOME = resolve(ROOT, 'node_modules/@biomejs/biome/bin/biome');

export interface NewModuleOptions {
  modules?: readonly ModuleDefinition[];
  config?: Config;
  scratchUrl?: string;
  out?: (text: string) => void;
  err?: (text: string) => void;
}

export async function newModuleCommand(argv: readonly string[], options: NewModuleOptions = {}): Promise<number> {
  const out = options.out ?? ((text: string) => process.stdout.write(text));
  const err = options.err ?? ((text: string) => process.stderr.write(text));
  const written: string[] = [];
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: { entity: { type: 'string' }, config: { type: 'string', default: 'config.yaml' } },
    });
    if (positionals.length !== 1) throw new UsageError('name the module');
    const moduleName = positionals[0]!;
    let names: ReturnType<typeof scaffoldNames>;
    try {
      names = scaffoldNames(moduleName, values.entity ?? moduleName);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    const { loadConfig } = await import('../framework/config/load.ts');
    const config = options.config ?? loadConfig(values.config);
    const modules = options.modules ?? (await import('../modules/index.ts')).allModules;
    if (modules.some((m) => m.name === moduleName)) throw new UsageError(`module ${moduleName} is registered already`);
    const migrations = resolve(ROOT, 'migrations', moduleName);
    if (existsSync(migrations) && readdirSync(migrations).length > 0)
      throw new UsageError(`migrations/${moduleName} exists already`);
    const files = scaffoldFiles(names);
    for (const path of Object.keys(files)) {
      if (existsSync(resolve(ROOT, path))) throw new UsageError(`${path} exists already`);
    }
    for (const [path, text] of Object.entries(files)) {
      const full = resolve(ROOT, path);
      mkdirSync(dirname(full), { recursive: true });
      writeFileSync(full, text, { flag: 'wx' });
      written.push(full);
    }
    // Laid out by the repository's formatter, as `npm run check` wants them: how long a line is
    // depends on the names given.
    execFileSync(process.execPath, [BIOME, 'format', '--write', ...written], { cwd: ROOT, stdio: 'pipe' });
    const migration = await newMigration(moduleName, names.plural, {
      allowDestructive: false,
      modules,
      config,
      newTablesOnly: true,
      ...(options.scratchUrl ? { scratchUrl: options.scratchUrl } : {}),
    });
    if (migration.file) written.push(resolve(ROOT, migration.file));
    const { importLine, entry } = registration(names);
    out(
      [
        `module ${moduleName}: entity ${names.module}.${names.entity} (table ${names.table}, ${names.path})`,
        ...[...Object.keys(files), ...(migration.file ? [migration.file] : [])].map((f) => `  wrote ${f}`),
        '',
        'Next steps:',
        `  1. Register it: add ${entry} to allModules in modules/index.ts, with its import:`,
        `  ${importLine}`,
        `  2. Edit modules/${moduleName}/ (fields, commands, fieldText); after each change of the fields:`,
        `       npm run migration:new -- ${moduleName} <change>   (then read the migration it writes)`,
        `     or, while your database has not applied the module's files (npm start applies them; npm run db:reset empties it):`,
        `       npm run migration:new -- ${moduleName} --rewrite   (writes them again as one file)`,
        '  3. Accept the API document and regenerate the typed client:',
        '       npm run openapi:accept',
        '       npm run client',
        `  4. Run its tests and the suites that hold every module to the contract:`,
        `       npx vitest run test/modules/${moduleName} test/conformance test/security`,
        '  5. npm run check (types, lint, OpenAPI lint, client), then commit the module, its migrations,',
        '     modules/index.ts, openapi/snapshot.json and client/schema.d.ts (docs/module-authoring.md, "From empty to merged")',
        '',
      ].join('\n'),
    );
    return 0;
  } catch (error) {
    for (const file of written.reverse()) rmSync(file, { force: true });
    for (const dir of new Set(written.map((f) => dirname(f)))) {
      if (existsSync(dir) && readdirSync(dir).length === 0) rmSync(dir, { recursive: true });
    }
    const e = error as Error & { code?: string };
    if (e instanceof UsageError || e.code?.startsWith('ERR_PARSE_ARGS')) {
      err(`new:module: ${e.message}\n${USAGE}\n`);
      return 2;
    }
    err(`new:module: ${e.stack ?? e.message}\n`);
    return 1;
  }
}

if (import.meta.main) {
  void newModuleCommand(process.argv.slice(2)).then((code) => process.exit(code));
}
