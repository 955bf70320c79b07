/**
 * npm run tenant:export -- <slug> <file> [--config config.yaml]
 *
 * The operator's export of one tenant, in this process, beside the service or without it: the same
 * archive as POST /api/v1/tenant/export writes (framework/bulk/tenant-export/archive.ts), streamed
 * to <file> (a .tar.gz) instead of the blob store, secrets left out the same way. Prints the
 * manifest's counts. Exits 2 on a usage error (no such tenant, a file that exists), 1 on a failure
 * (the partial file is removed).
 */
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { loadConfig } from '../framework/config/load.ts';
import type { Config } from '../framework/config/schema.ts';
import type { ModuleDefinition } from '../framework/entity/define.ts';
import { isCommandRefusal, openCommandApp, type CommandApp } from './command-database.ts';

const USAGE = 'usage: npm run tenant:export -- <slug> <file> [--config config.yaml]';

class UsageError extends Error {
  override name = 'UsageError';
}

export interface TenantExportCommandOptions {
  modules?: readonly ModuleDefinition[];
  config?: Config;
  out?: (text: string) => void;
  err?: (text: string) => void;
}

export async function tenantExportCommand(
  argv: readonly string[],
  options: TenantExportCommandOptions = {},
): Promise<number> {
  const out = options.out ?? ((text: string) => process.stdout.write(text));
  const err = options.err ?? ((text: string) => process.stderr.write(text));
  let command: CommandApp | undefined;
  let file: string | undefined;
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: { config: { type: 'string', default: 'config.yaml' } },
    });
    if (positionals.length !== 2) throw new UsageError('name a tenant (its slug) and a file');
    const [slug, target] = positionals as [string, string];
    const config = options.config ?? loadConfig(values.config);
    const modules = options.modules ?? (await import('../modules/index.ts')).allModules;
    const [{ tenantBySlug }, { tenantArchive }] = await Promise.all([
      import('../framework/context/tenant-lookup.ts'),
      import('../framework/bulk/tenant-export/archive.ts'),
    ]);
    command = await openCommandApp(config, { modules });
    const { services } = command.app;
    const tenant = await tenantBySlug(services.db, slug);
    if (!tenant) throw new UsageError(`no tenant ${slug}`);
    // wx: never over an existing file.
    const sink = createWriteStream(target, { flags: 'wx' });
    await new Promise<void>((resolve, reject) => {
      sink.once('open', () => resolve());
      sink.once('error', (e: NodeJS.ErrnoException) =>
        reject(e.code === 'EEXIST' ? new UsageError(`${target} exists: name a new file`) : e),
      );
    });
    file = target;
    const { stream, manifest } = tenantArchive(
      services,
      { id: tenant.id, slug: tenant.slug, isOperator: tenant.isOperator },
      services.clock.now(),
    );
    await pipeline(stream, sink);
    const written = await manifest;
    file = undefined;
    const rows = Object.values(written.tables).reduce((n, t) => n + t.rows, 0);
    out(
      `${target}: tenant ${slug}, ${Object.keys(written.tables).length} tables, ${rows} rows, ${written.files.count} files (${written.files.bytes} bytes); left out: ${Object.keys(written.excludedTables).join(', ') || 'nothing'} and the secret columns the manifest names\n`,
    );
    return 0;
  } catch (error) {
    if (file) await rm(file, { force: true });
    const e = error as Error & { code?: string };
    if (e instanceof UsageError || e.code?.startsWith('ERR_PARSE_ARGS')) {
      err(`tenant:export: ${e.message}\n${USAGE}\n`);
      return 2;
    }
    const known = isCommandRefusal(e);
    err(`tenant:export: ${known ? e.message : (e.stack ?? e.message)}\n`);
    return 1;
  } finally {
    await command?.close();
  }
}

if (import.meta.main) {
  void tenantExportCommand(process.argv.slice(2)).then((code) => process.exit(code));
}
