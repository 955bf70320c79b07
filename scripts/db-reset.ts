/**
 * npm run db:reset [-- --config config.yaml]
 *
 * Development only: empties the embedded PostgreSQL's database (`tenantry` under
 * database.embedded_dir), so that the next start migrates it from the first file and creates the
 * operator's tenant again. The database is dropped and created anew; the server's data directory,
 * its roles and the files under files.dir stay. Refused, in one line, when database.url is set (a
 * configured server is never emptied by a command) and while the embedded server runs (the service
 * holds it: stop it first). With no data directory yet there is nothing to empty.
 *
 * Exits 0 when the database is empty, 1 on a refusal or a failure, 2 on a usage error.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import type { Config } from '../framework/config/schema.ts';
import { runningServer, startEmbeddedPostgres } from '../framework/db/embedded.ts';

/** The database the service keeps in the embedded server (framework/main.ts). */
export const DEVELOPMENT_DATABASE = 'tenantry';

const USAGE = 'usage: npm run db:reset [-- --config config.yaml]';

export interface DbResetOptions {
  /** Read from --config unless given. */
  config?: Config;
  out?: (text: string) => void;
  err?: (text: string) => void;
}

/** Drops the database and creates it again, empty, on the server of adminUrl. */
export async function emptyDatabase(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  // A query under way rejects with the server's error, which the command reports; an end between
  // queries (57P01) would otherwise be an uncaught 'error' event.
  client.on('error', () => {});
  await client.connect();
  try {
    const quoted = client.escapeIdentifier(name);
    await client.query(`drop database if exists ${quoted} with (force)`);
    await client.query(`create database ${quoted}`);
  } finally {
    await client.end();
  }
}

/** The command itself: returns its exit status. */
export async function dbResetCommand(argv: readonly string[], options: DbResetOptions = {}): Promise<number> {
  const out = options.out ?? ((text: string) => process.stdout.write(text));
  const err = options.err ?? ((text: string) => process.stderr.write(text));
  let config: Config;
  try {
    const { values } = parseArgs({
      args: [...argv],
      options: { config: { type: 'string', default: 'config.yaml' } },
    });
    const { loadConfig } = await import('../framework/config/load.ts');
    config = options.config ?? loadConfig(values.config);
  } catch (error) {
    const e = error as Error & { code?: string };
    if (e.code?.startsWith('ERR_PARSE_ARGS')) {
      err(`db:reset: ${e.message}\n${USAGE}\n`);
      return 2;
    }
    err(`db:reset: ${e.message}\n`);
    return 1;
  }
  if (config.database.url) {
    err(
      'db:reset: database.url is set: db:reset empties only the embedded development database, never a configured server (drop that database with its own tools)\n',
    );
    return 1;
  }
  const dir = config.database.embedded_dir;
  if (!existsSync(join(resolve(dir), 'PG_VERSION'))) {
    out(`no development database in ${dir}: nothing to empty\n`);
    return 0;
  }
  const running = runningServer(dir);
  if (running) {
    err(
      `db:reset: the embedded PostgreSQL in ${dir} is running (process ${running.pid}, port ${running.port}): stop the service, then run npm run db:reset again\n`,
    );
    return 1;
  }
  try {
    const server = await startEmbeddedPostgres({ dir, port: config.database.embedded_port });
    try {
      await emptyDatabase(server.adminUrl, DEVELOPMENT_DATABASE);
    } finally {
      await server.stop();
    }
  } catch (error) {
    err(`db:reset: ${(error as Error).message.replace(/\s+/g, ' ').trim()}\n`);
    return 1;
  }
  out(
    `emptied the development database (${DEVELOPMENT_DATABASE} in ${dir}): the next npm start migrates it from the first file and creates the operator's tenant again\n`,
  );
  return 0;
}

if (import.meta.main) {
  void dbResetCommand(process.argv.slice(2)).then((code) => process.exit(code));
}
