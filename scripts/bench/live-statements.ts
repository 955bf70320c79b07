import { readFileSync, readdirSync } from 'node:fs';
import pg from 'pg';

/**
 * What the live scenario's creates cost PostgreSQL, broken down (`npm run bench -- --only live
 * --live-statements`): over one phase, per create committed, each statement's calls, execution and
 * planning time, rows and WAL (pg_stat_statements, nested statements included and marked), the
 * transactions and tuples of the database, the WAL written and its writes and fsyncs by process
 * kind (pg_stat_wal, pg_stat_io), and the CPU time of the server's processes by kind (/proc).
 */

interface StatementRow {
  query: string;
  toplevel: boolean;
  calls: string;
  total_exec_time: number;
  total_plan_time: number;
  rows: string;
  blocks: string;
  wal_bytes: string;
}

/** CPU ms (user, system) of each of the server's processes, by pid. */
type Cpu = Map<number, { user: number; system: number }>;

/** The postmaster's and its children's CPU so far: system time apart, where a commit's fsync shows. */
function serverTimes(postmasterPid: number): Cpu {
  const times: Cpu = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ');
      if (Number(entry) === postmasterPid || Number(fields[1]) === postmasterPid)
        times.set(Number(entry), { user: Number(fields[11]) * 10, system: Number(fields[12]) * 10 });
    } catch {
      // The process ended while we looked.
    }
  }
  return times;
}

const TOP = 30;

export async function measureStatements(
  url: string,
  postmasterPid: number,
): Promise<{ finish: (creates: number, wallSeconds: number) => Promise<string[]> }> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const database = async () =>
    (
      await admin.query<Record<string, string>>(
        `select xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted, tup_returned, tup_fetched
           from pg_stat_database where datname = current_database()`,
      )
    ).rows[0]!;
  await admin.query('select pg_stat_statements_reset()');
  await admin.query(`select pg_stat_reset_shared('wal')`);
  await admin.query(`select pg_stat_reset_shared('io')`);
  // The database's counters are flushed by the backends when idle, within a second: read them
  // before and after rather than reset them.
  const database0 = await database();
  const cpu0: Cpu = serverTimes(postmasterPid);
  const own = (await admin.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;

  const finish = async (creates: number, wallSeconds: number): Promise<string[]> => {
    const cpu1: Cpu = serverTimes(postmasterPid);
    // Backends report their cumulative statistics when idle, at most every second.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    try {
      const lines: string[] = [];
      const per = (n: number) => n / creates;
      const kinds = new Map<number, string>(
        (
          await admin.query<{ pid: number; kind: string }>(
            `select pid, backend_type || case when datname is null or datname = current_database() then '' else ' (' || datname || ')' end as kind
               from pg_stat_activity`,
          )
        ).rows.map((r) => [r.pid, r.kind]),
      );
      const byKind = new Map<string, { ms: number; system: number; processes: number }>();
      for (const [pid, times] of cpu1) {
        if (pid === own) continue;
        const kind = pid === postmasterPid ? 'postmaster' : (kinds.get(pid) ?? 'ended before the reading');
        const before = cpu0.get(pid) ?? { user: 0, system: 0 };
        const system = times.system - before.system;
        const used = times.user - before.user + system;
        if (used <= 0) continue;
        const entry = byKind.get(kind) ?? { ms: 0, system: 0, processes: 0 };
        entry.ms += used;
        entry.system += system;
        entry.processes++;
        byKind.set(kind, entry);
      }
      const cpuTotal = [...byKind.values()].reduce((sum, e) => sum + e.ms, 0);
      lines.push(
        `    PostgreSQL over ${creates} creates in ${wallSeconds.toFixed(1)} s: ${(cpuTotal / 1000).toFixed(2)} CPU-s, ${(per(cpuTotal) * 1000).toFixed(0)} µs a create; by process kind (µs a create, of which system; processes that used CPU):`,
      );
      for (const [kind, e] of [...byKind].sort((a, b) => b[1].ms - a[1].ms))
        lines.push(
          `      ${(per(e.ms) * 1000).toFixed(0).padStart(6)} µs (${(per(e.system) * 1000).toFixed(0)} system)  ${kind} (${e.processes})`,
        );

      const database1 = await database();
      lines.push(
        `    database, a create: ${Object.keys(database1)
          .map((k) => `${k} ${per(Number(database1[k]) - Number(database0[k])).toFixed(2)}`)
          .join(', ')}`,
      );
      const wal = (
        await admin.query<Record<string, string>>(
          'select wal_records, wal_fpi, wal_bytes, wal_buffers_full from pg_stat_wal',
        )
      ).rows[0]!;
      lines.push(
        `    WAL, a create: ${Object.entries(wal)
          .map(([k, v]) => `${k} ${per(Number(v)).toFixed(2)}`)
          .join(', ')}`,
      );
      const io = await admin.query<{
        backend_type: string;
        writes: string;
        write_ms: number;
        fsyncs: string;
        fsync_ms: number;
      }>(
        `select backend_type, sum(writes) as writes, sum(write_time) as write_ms, sum(fsyncs) as fsyncs, sum(fsync_time) as fsync_ms
           from pg_stat_io where object = 'wal' group by backend_type
         having sum(writes) > 0 or sum(fsyncs) > 0 order by sum(fsyncs) desc nulls last`,
      );
      for (const r of io.rows)
        lines.push(
          `    WAL I/O by ${r.backend_type}, a create: ${per(Number(r.writes)).toFixed(2)} writes (${(per(r.write_ms) * 1000).toFixed(0)} µs), ${per(Number(r.fsyncs)).toFixed(2)} fsyncs (${(per(r.fsync_ms) * 1000).toFixed(0)} µs)`,
        );

      const { rows } = await admin.query<StatementRow>(
        `select s.query, s.toplevel, s.calls, s.total_exec_time, s.total_plan_time, s.rows,
                s.shared_blks_hit + s.shared_blks_read as blocks, s.wal_bytes
           from pg_stat_statements s join pg_database d on d.oid = s.dbid
          where d.datname = current_database() and s.query not like '%pg_stat%'
          order by s.total_exec_time + s.total_plan_time desc`,
      );
      const top = rows.filter((r) => r.toplevel);
      const sum = (list: StatementRow[], f: (r: StatementRow) => number) => list.reduce((a, r) => a + f(r), 0);
      lines.push(
        `    statements (top level): ${per(sum(top, (r) => Number(r.calls))).toFixed(2)} a create, executing ${(per(sum(top, (r) => r.total_exec_time)) * 1000).toFixed(0)} µs and planning ${(per(sum(top, (r) => r.total_plan_time)) * 1000).toFixed(0)} µs of it; the ${TOP} costliest, nested ones marked ↳ (their time is within their caller's):`,
      );
      lines.push('       calls   exec µs   plan µs  rows/call  blocks/call   WAL B  statement (a create)');
      for (const r of rows.slice(0, TOP)) {
        const calls = Number(r.calls);
        lines.push(
          `      ${per(calls).toFixed(3).padStart(6)} ${(per(r.total_exec_time) * 1000).toFixed(1).padStart(9)} ${(per(r.total_plan_time) * 1000).toFixed(1).padStart(9)} ${(Number(r.rows) / calls).toFixed(1).padStart(10)} ${(Number(r.blocks) / calls).toFixed(1).padStart(12)} ${per(Number(r.wal_bytes)).toFixed(0).padStart(7)}  ${r.toplevel ? '' : '↳ '}${r.query.replace(/\s+/g, ' ').slice(0, 150)}`,
        );
      }
      const rest = rows.slice(TOP);
      if (rest.length > 0)
        lines.push(
          `      and ${rest.length} more: ${per(sum(rest, (r) => Number(r.calls))).toFixed(3)} calls, ${(per(sum(rest, (r) => r.total_exec_time + r.total_plan_time)) * 1000).toFixed(1)} µs a create`,
        );
      return lines;
    } finally {
      await admin.end();
    }
  };
  return { finish };
}
