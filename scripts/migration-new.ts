/**
 * npm run migration:new -- <module> <name> [--allow-destructive] [--config config.yaml]
 *
 * Compares the module's entity definitions with the tables the existing migrations make (applied,
 * those of every owner in the runner's order, to a scratch database that is dropped afterwards) and
 * writes what differs as migrations/<module>/NNNN_<name>.sql, for a person to read and commit.
 * Prints "no changes" and writes nothing when the tables already agree. A destructive change (a
 * dropped column, a narrowed type or check) is written only with --allow-destructive, under a
 * comment; without it, the command lists what it left out.
 *
 * The scratch database lives on TEST_DATABASE_URL's server when that is set, else on database.url's,
 * else on the embedded PostgreSQL the service runs (or one started for the command's duration).
 * Exits 2 on a usage error (unknown module, no name), 1 on a failure.
 */
import { existsSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import type { ModuleDefinition } from '../framework/entity/define.ts';
import type { Config } from '../framework/config/schema.ts';
import { generateMigration, migrationSlug, writeMigration } from '../framework/schema/generate.ts';
import { scratchServer, withScratchDatabase } from '../framework/schema/scratch.ts';

const USAGE = 'usage: npm run migration:new -- <module> <name> [--allow-destructive] [--config config.yaml]';

export class UsageError extends Error {
  override name = 'UsageError';
}

export interface MigrationNewOptions {
  /** The installation's modules unless given. */
  modules?: readonly ModuleDefinition[];
  /** Read from --config unless given. */
  config?: Config;
  /** A server where the scratch database may be created; otherwise found as the header says. */
  scratchUrl?: string;
  out?: (text: string) => void;
  err?: (text: string) => void;
}

const ROOT = resolve(import.meta.dirname, '..');

/** A module by name: a registered one, or one not registered yet, from modules/<name>/index.ts. */
export async function findModule(
  name: string,
  modules: readonly ModuleDefinition[],
): Promise<{ module: ModuleDefinition; registered: boolean }> {
  const registered = modules.find((m) => m.name === name);
  if (registered) return { module: registered, registered: true };
  const file = resolve(ROOT, 'modules', name, 'index.ts');
  if (/^[a-z][a-z0-9_-]*$/.test(name) && existsSync(file)) {
    const exports = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    const found = Object.values(exports).find(
      (v): v is ModuleDefinition => typeof v === 'object' && v !== null && (v as ModuleDefinition).name === name,
    );
    if (found) return { module: found, registered: false };
  }
  throw new UsageError(
    `no module ${name}; registered: ${modules.map((m) => m.name).join(', ')} (or a modules/${name}/index.ts exporting it)`,
  );
}

async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => {});
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** The server for the scratch database, as the header says. */
async function scratchUrlFor(config: Config): Promise<string | undefined> {
  if (process.env.TEST_DATABASE_URL) return process.env.TEST_DATABASE_URL;
  if (config.database.url) return config.database.url;
  const running = `postgres://postgres:postgres@127.0.0.1:${config.database.embedded_port}/postgres`;
  return (await reachable(running)) ? running : undefined;
}

export interface NewMigration {
  /** The file written, relative to the root; undefined when nothing changed. */
  file: string | undefined;
  leftOut: string[];
  notGenerated: string[];
}

/** Generates and writes the module's next migration (the command without its argument parsing). */
export async function newMigration(
  moduleName: string,
  name: string,
  options: {
    allowDestructive: boolean;
    modules: readonly ModuleDefinition[];
    config: Config;
    scratchUrl?: string;
    /** A new module's first migration: refused (nothing written) if a table it would create exists already. */
    newTablesOnly?: boolean;
  },
): Promise<NewMigration> {
  migrationSlug(name);
  const { module, registered } = await findModule(moduleName, options.modules);
  const { migrationSources } = await import('../framework/app.ts');
  // Every owner's migrations in the runner's order; a module not registered yet comes last.
  const sources = migrationSources(registered ? options.modules : [...options.modules, module]);
  const dir = sources.find((s) => s.owner === module.name)!.dir;
  const server = await scratchServer(options.scratchUrl ?? (await scratchUrlFor(options.config)));
  try {
    const command = `npm run migration:new -- ${module.name} ${migrationSlug(name)}${options.allowDestructive ? ' --allow-destructive' : ''}`;
    const generated = await withScratchDatabase(server.adminUrl, sources, (pool) =>
      generateMigration(pool, module.entities ?? [], {
        allowDestructive: options.allowDestructive,
        command,
        installed: [...options.modules, module].flatMap((m) => m.entities ?? []),
      }),
    );
    const existing = generated.changes.filter((c) => c.kind !== 'create-table').map((c) => c.table);
    if (options.newTablesOnly && existing.length > 0) {
      throw new UsageError(
        `table ${[...new Set(existing)].join(', ')} exists already (another module's): give the entity another name`,
      );
    }
    const file = generated.sql ? relative(ROOT, writeMigration(dir, name, generated.sql)) : undefined;
    return { file, leftOut: generated.leftOut, notGenerated: generated.notGenerated };
  } finally {
    await server.stop();
  }
}

/** The command itself: returns its exit status. */
export async function migrationNewCommand(argv: readonly string[], options: MigrationNewOptions = {}): Promise<number> {
  const out = options.out ?? ((text: string) => process.stdout.write(text));
  const err = options.err ?? ((text: string) => process.stderr.write(text));
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        'allow-destructive': { type: 'boolean', default: false },
        config: { type: 'string', default: 'config.yaml' },
      },
    });
    if (positionals.length !== 2) throw new UsageError('name the module and the migration');
    const [moduleName, name] = positionals as [string, string];
    try {
      migrationSlug(name);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    const { loadConfig } = await import('../framework/config/load.ts');
    const config = options.config ?? loadConfig(values.config);
    const modules = options.modules ?? (await import('../modules/index.ts')).allModules;
    const result = await newMigration(moduleName, name, {
      allowDestructive: values['allow-destructive'],
      modules,
      config,
      ...(options.scratchUrl ? { scratchUrl: options.scratchUrl } : {}),
    });
    out(result.file ? `wrote ${result.file}: read it, then commit it\n` : 'no changes\n');
    if (result.leftOut.length) {
      out(
        `left out, destructive (run again with --allow-destructive to write them):\n${result.leftOut.map((l) => `  ${l}\n`).join('')}`,
      );
    }
    if (result.notGenerated.length)
      out(`not generated, write these by hand:\n${result.notGenerated.map((l) => `  ${l}\n`).join('')}`);
    return 0;
  } catch (error) {
    const e = error as Error & { code?: string };
    if (e instanceof UsageError || e.code?.startsWith('ERR_PARSE_ARGS')) {
      err(`migration:new: ${e.message}\n${USAGE}\n`);
      return 2;
    }
    const known = ['ConfigError', 'MigrationError'].includes(e.name);
    err(`migration:new: ${known ? e.message : (e.stack ?? e.message)}\n`);
    return 1;
  }
}

if (import.meta.main) {
  void migrationNewCommand(process.argv.slice(2)).then((code) => process.exit(code));
}
