import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './ports.ts';

/**
 * PgBouncer (Debian's package, /usr/sbin/pgbouncer) started by a test on loopback in front of the
 * test PostgreSQL, in transaction mode, configured as docs/operations.md tells an operator to.
 */

/** The pgbouncer binary: on PATH, or where Debian installs it. Undefined when it is not installed. */
export const PGBOUNCER = ((): string | undefined => {
  for (const candidate of ['pgbouncer', '/usr/sbin/pgbouncer']) {
    try {
      execFileSync(candidate, ['--version'], { stdio: 'ignore' });
      return candidate;
    } catch {
      // not this one
    }
  }
  return undefined;
})();

/** PgBouncer's version, e.g. "1.18.0". */
export const pgbouncerVersion = (): string =>
  /PgBouncer (\S+)/.exec(execFileSync(PGBOUNCER!, ['--version'], { encoding: 'utf8' }))?.[1] ?? 'unknown';

export interface PgBouncer {
  readonly port: number;
  /** The URL of a database through the pooler (same user, password and database as the direct URL). */
  urlFor(directUrl: string): string;
  /** What PgBouncer logged so far. */
  log(): string;
  stop(): Promise<void>;
}

/**
 * Starts PgBouncer in front of the PostgreSQL of `serverUrl` (its user and password, every
 * database), pool_mode transaction and default_pool_size 4. PgBouncer refuses to run as root: as
 * root it is told to switch to the postgres OS user (its -u option), who must read the files.
 */
export async function startPgBouncer(serverUrl: string, options: { poolSize?: number } = {}): Promise<PgBouncer> {
  if (!PGBOUNCER) throw new Error('pgbouncer is not installed');
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username);
  const password = decodeURIComponent(server.password);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'tenantry-pgbouncer-'));
  chmodSync(dir, 0o755);
  const quoted = (value: string) => `"${value.replaceAll('"', '""')}"`;
  writeFileSync(join(dir, 'users.txt'), `${quoted(user)} ${quoted(password)}\n`, { mode: 0o644 });
  const ini = join(dir, 'pgbouncer.ini');
  writeFileSync(
    ini,
    [
      '[databases]',
      // Every database of the server, as the client names it; PgBouncer logs in with the auth_file's password.
      `* = host=${server.hostname} port=${server.port}`,
      '',
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = plain',
      `auth_file = ${join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      `default_pool_size = ${options.poolSize ?? 4}`,
      'max_client_conn = 1000',
      // Log every connection's refusal and error; no stats lines every minute.
      'log_connections = 0',
      'log_disconnections = 0',
      'stats_period = 3600',
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const asRoot = userInfo().uid === 0;
  const child: ChildProcess = spawn(PGBOUNCER, [...(asRoot ? ['-u', 'postgres'] : []), ini], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const urlFor = (directUrl: string) => {
    const url = new URL(directUrl);
    url.hostname = '127.0.0.1';
    url.port = String(port);
    return url.toString();
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGINT');
      const force = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(force);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  // Up once it answers a query through it.
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`pgbouncer exited with ${child.exitCode}:\n${output}`);
    }
    const client = new pg.Client({ connectionString: urlFor(serverUrl), connectionTimeoutMillis: 1000 });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('select 1');
      await client.end();
      break;
    } catch (err) {
      await client.end().catch(() => {});
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`pgbouncer did not answer on port ${port}: ${(err as Error).message}\n${output}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { port, urlFor, log: () => output, stop };
}
