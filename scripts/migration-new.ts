/**
 * npm run migration:new -- <module> <name> [--allow-destructive] [--config config.yaml]
 * npm run migration:new -- <module> [<name>] --rewrite [--allow-destructive] [--config config.yaml]
 *
 * Compares the module's entity definitions with the tables the existing migrations make (applied,
 * those of every owner in the runner's order, to a scratch database that is dropped afterwards) and
 * writes what differs as migrations/<module>/NNNN_<name>.sql, for a person to read and commit.
 * Prints "no changes" and writes nothing when the tables already agree. A destructive change (a
 * dropped column, a narrowed type or check) is written only with --allow-destructive, under a
 * comment; without it, the command lists what it left out.
 *
 * --rewrite regenerates the module's migrations the development database has not applied: the
 * files after its newest applied one (every file of a module it never started) are removed and
 * written again as one file under the first one's number (and name, unless one is given), from the
 * definition as it is now. Applied is what that database's migration_history records: the file's
 * name, or its SHA-256 under another name (a renamed applied file). With nothing left to rewrite
 * (the newest file is applied) or an applied file after one that is not, it refuses in one line
 * naming the applied file, and changes nothing. The development database is the one the service
 * starts on with this configuration (database.direct_url or database.url, else the embedded one
 * under database.embedded_dir); no other database can be asked, so a file merged and shipped is the
 * author's to keep (docs/module-authoring.md).
 *
 * The scratch database lives on TEST_DATABASE_URL's server when that is set, else on database.url's,
 * else on the embedded PostgreSQL the service runs (or one started for the command's duration).
 * Exits 2 on a usage error (unknown module, no name), 1 on a failure.
 */
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import type { ModuleDefinition } from '../framework/entity/define.ts';
import type { Config } from '../framework/config/schema.ts';
import { migrationChecksum } from '../framework/db/migrate.ts';
import { generateMigration, migrationSlug, writeMigration } from '../framework/schema/generate.ts';
import { scratchServer, withScratchDatabase } from '../framework/schema/scratch.ts';

const USAGE =
  'usage: npm run migration:new -- <module> <name> [--allow-destructive] [--config config.yaml]\n' +
  '       npm run migration:new -- <module> [<name>] --rewrite [--allow-destructive] [--config config.yaml]';

export class UsageError extends Error {
  override name = 'UsageError';
}

/** --rewrite would replace a file a database has applied: one line naming it. */
export class RewriteRefused extends Error {
  override name = 'RewriteRefused';
}

export interface MigrationNewOptions {
  /** The installation's modules unless given. */
  modules?: readonly ModuleDefinition[];
  /** Read from --config unless given. */
  config?: Config;
  /** A server where the scratch database may be created; otherwise found as the header says. */
  scratchUrl?: string;
  /** --rewrite: the database whose migration_history says what is applied (null: none); the development database unless given. */
  historyUrl?: string | null;
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

interface GenerateOptions {
  allowDestructive: boolean;
  modules: readonly ModuleDefinition[];
  config: Config;
  scratchUrl?: string;
  /** A new module's first migration: refused (nothing written) if a table it would create exists already. */
  newTablesOnly?: boolean;
}

/**
 * The module's next migration as generated against every owner's migrations (the module's own read
 * from `moduleDir` when given: a rewrite's kept files), not written yet.
 */
async function generateFor(
  module: ModuleDefinition,
  registered: boolean,
  name: string,
  options: GenerateOptions & { rewrite?: boolean },
  moduleDir?: string,
) {
  const { migrationSources } = await import('../framework/app.ts');
  // Every owner's migrations in the runner's order; a module not registered yet comes last.
  const sources = migrationSources(registered ? options.modules : [...options.modules, module]);
  const dir = sources.find((s) => s.owner === module.name)!.dir;
  const scratchSources = moduleDir
    ? sources.map((s) => (s.owner === module.name ? { ...s, dir: moduleDir } : s))
    : sources;
  const server = await scratchServer(options.scratchUrl ?? (await scratchUrlFor(options.config)));
  try {
    const flags = `${options.rewrite ? ' --rewrite' : ''}${options.allowDestructive ? ' --allow-destructive' : ''}`;
    const command = `npm run migration:new -- ${module.name} ${migrationSlug(name)}${flags}`;
    const generated = await withScratchDatabase(server.adminUrl, scratchSources, (pool) =>
      generateMigration(pool, module.entities ?? [], {
        allowDestructive: options.allowDestructive,
        command,
        installed: [...options.modules, module].flatMap((m) => m.entities ?? []),
      }),
    );
    return { dir, generated };
  } finally {
    await server.stop();
  }
}

/** Generates and writes the module's next migration (the command without its argument parsing). */
export async function newMigration(moduleName: string, name: string, options: GenerateOptions): Promise<NewMigration> {
  migrationSlug(name);
  const { module, registered } = await findModule(moduleName, options.modules);
  const { dir, generated } = await generateFor(module, registered, name, options);
  const existing = generated.changes.filter((c) => c.kind !== 'create-table').map((c) => c.table);
  if (options.newTablesOnly && existing.length > 0) {
    throw new UsageError(
      `table ${[...new Set(existing)].join(', ')} exists already (another module's): give the entity another name`,
    );
  }
  const file = generated.sql ? relative(ROOT, writeMigration(dir, name, generated.sql)) : undefined;
  return { file, leftOut: generated.leftOut, notGenerated: generated.notGenerated };
}

/** A module's migration files in the runner's order (NNNN_<name>.sql). */
const sqlFiles = (dir: string): string[] =>
  existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith('.sql'))
        .sort()
    : [];

/** What a database's migration_history records of an owner: each applied file's name and SHA-256 (null before checksums). */
export async function appliedMigrations(
  historyUrl: string | null,
  owner: string,
): Promise<{ name: string; checksum: string | null }[]> {
  if (historyUrl === null) return [];
  const client = new pg.Client({ connectionString: historyUrl, connectionTimeoutMillis: 5000 });
  client.on('error', () => {});
  await client.connect();
  try {
    const table = await client.query(`select to_regclass('migration_history') is not null as present`);
    if (!table.rows[0]?.present) return [];
    const { rows } = await client.query<{ name: string; checksum: string | null }>(
      `select name, to_jsonb(h) ->> 'checksum' as checksum from migration_history h where owner = $1 order by name`,
      [owner],
    );
    return rows;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * The development database's URL, as the service would start on it with this configuration, or
 * null when there is none yet (an embedded data directory never initialised: nothing applied),
 * and the server the command started to read it, to stop.
 */
async function developmentDatabase(
  config: Config,
): Promise<{ url: string | null; where: string; stop: () => Promise<void> }> {
  const given = config.database.direct_url || config.database.url;
  if (given) return { url: given, where: 'database.url', stop: async () => {} };
  const where = `the embedded PostgreSQL in ${config.database.embedded_dir}`;
  if (!existsSync(join(resolve(config.database.embedded_dir), 'PG_VERSION')))
    return { url: null, where, stop: async () => {} };
  const { commandDatabase } = await import('./command-database.ts');
  const { databaseUrl, embedded } = await commandDatabase(config);
  return { url: databaseUrl, where, stop: async () => embedded?.stop() };
}

export interface RewrittenMigrations extends NewMigration {
  /** The files removed (relative to the root), in order. */
  removed: string[];
}

/**
 * --rewrite: the module's files after the newest one the history database has applied are removed
 * and written again as one, from the definition as it is now (see the header). Refused, changing
 * nothing, when the newest file is applied or an applied file follows one that is not.
 */
export async function rewriteMigrations(
  moduleName: string,
  name: string | undefined,
  options: GenerateOptions & { historyUrl?: string | null },
): Promise<RewrittenMigrations> {
  if (name !== undefined) migrationSlug(name);
  const { module, registered } = await findModule(moduleName, options.modules);
  const { migrationSources } = await import('../framework/app.ts');
  const dir = migrationSources(registered ? options.modules : [...options.modules, module]).find(
    (s) => s.owner === module.name,
  )!.dir;
  const files = sqlFiles(dir);
  if (files.length === 0)
    throw new UsageError(
      `${module.name} has no migration to rewrite: npm run migration:new -- ${module.name} <name> writes its first`,
    );
  let history: { name: string; checksum: string | null }[];
  let where = 'the given database';
  if (options.historyUrl !== undefined) {
    history = await appliedMigrations(options.historyUrl, module.name);
  } else {
    const development = await developmentDatabase(options.config);
    where = development.where;
    try {
      history = await appliedMigrations(development.url, module.name);
    } finally {
      await development.stop();
    }
  }
  const names = new Set(history.map((h) => h.name));
  const checksums = new Set(history.flatMap((h) => (h.checksum ? [h.checksum] : [])));
  const applied = (file: string) => names.has(file) || checksums.has(migrationChecksum(readFileSync(join(dir, file))));
  const first = files.findIndex((f) => !applied(f));
  const fix = `write the change as a new migration (npm run migration:new -- ${module.name} <change>), or empty the development database first (npm run db:reset)`;
  if (first === -1)
    throw new RewriteRefused(
      `migration ${module.name}/${files.at(-1)} is applied to the development database (${where}): nothing to rewrite; ${fix}`,
    );
  const later = files.slice(first).find(applied);
  if (later)
    throw new RewriteRefused(
      `migration ${module.name}/${later} is applied to the development database (${where}), after ${files[first]} which is not: ${fix}`,
    );
  const rewritten = files.slice(first);
  const fileName = name ?? rewritten[0]!.replace(/^\d+_/, '').replace(/\.sql$/, '');
  // The scratch database gets the module's kept files only: the rewritten ones are what is regenerated.
  const kept = mkdtempSync(join(tmpdir(), 'tenantry-rewrite-'));
  try {
    cpSync(dir, kept, { recursive: true, filter: (source) => !rewritten.some((f) => source === join(dir, f)) });
    const { generated } = await generateFor(module, registered, fileName, { ...options, rewrite: true }, kept);
    for (const file of rewritten) rmSync(join(dir, file));
    const file = generated.sql ? relative(ROOT, writeMigration(dir, fileName, generated.sql)) : undefined;
    return {
      file,
      removed: rewritten.map((f) => relative(ROOT, join(dir, f))),
      leftOut: generated.leftOut,
      notGenerated: generated.notGenerated,
    };
  } finally {
    rmSync(kept, { recursive: true, force: true });
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
        rewrite: { type: 'boolean', default: false },
        config: { type: 'string', default: 'config.yaml' },
      },
    });
    const rewrite = values.rewrite;
    if (rewrite ? positionals.length < 1 || positionals.length > 2 : positionals.length !== 2)
      throw new UsageError(rewrite ? 'name the module to rewrite' : 'name the module and the migration');
    const [moduleName, name] = positionals as [string, string | undefined];
    try {
      if (name !== undefined) migrationSlug(name);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    const { loadConfig } = await import('../framework/config/load.ts');
    const config = options.config ?? loadConfig(values.config);
    const modules = options.modules ?? (await import('../modules/index.ts')).allModules;
    const settings = {
      allowDestructive: values['allow-destructive'],
      modules,
      config,
      ...(options.scratchUrl ? { scratchUrl: options.scratchUrl } : {}),
    };
    let result: NewMigration;
    if (rewrite) {
      const rewritten = await rewriteMigrations(moduleName, name, {
        ...settings,
        ...(options.historyUrl !== undefined ? { historyUrl: options.historyUrl } : {}),
      });
      out(`removed ${rewritten.removed.join(', ')} (not applied)\n`);
      result = rewritten;
    } else {
      result = await newMigration(moduleName, name!, settings);
    }
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
    const known = ['ConfigError', 'MigrationError', 'RewriteRefused', 'CommandDatabaseError'].includes(e.name);
    err(`migration:new: ${known ? e.message : (e.stack ?? e.message)}\n`);
    return 1;
  }
}

if (import.meta.main) {
  void migrationNewCommand(process.argv.slice(2)).then((code) => process.exit(code));
}
