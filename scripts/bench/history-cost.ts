import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startServer, type ServerProcess } from './child.ts';
import { measurePair, type Pair, type Plan } from './throughput.ts';
import { signIn } from './login.ts';
import { send } from './http.ts';
import { BENCH_PASSWORD, type SeedInfo } from './seed.ts';
import type { BenchOptions } from './options.ts';
import type { ServiceSettings } from './protocol.ts';
import type { ResultRow } from './report.ts';

const WIDGETS = '/api/v1/testkit/widgets';
const CREATE_BODY = '{"name":"bench-[<id>]","size":7,"color":"blue","note":"created by the benchmark"}';
/** Issue 46, point 7: with history on, create and PATCH keep at least this share of their req/s with it off. */
const TARGET = 0.9;
/** Seeded widgets the PATCHes spread over, so connections rarely wait for one another's row lock. */
const PATCHED_ROWS = 1000;

/** The seeded widget ids of a tenant (scripts/bench/seed.ts numbers them from 1, the tenant's first eight digits ahead). */
const seededIds = (tenantId: string, count: number) =>
  Array.from(
    { length: count },
    (_, i) => `${tenantId.slice(0, 8)}-0000-7000-8000-${(i + 1).toString(16).padStart(12, '0')}`,
  );

/**
 * `--only history`: what history costs a write. Two service processes (service.ts, role all, each
 * with its own seeded tenants in the run's database), identical but for TENANTRY_BENCH_HISTORY: on
 * one the test kit's widget keeps history (every create and PATCH writes a revision in its
 * transaction), on the other it is declared `history: false`. Create and PATCH (a new size and
 * note on one of 1,000 seeded widgets at random) are measured on both in alternating rounds
 * (throughput.ts). Reported: each side's req/s and latency, on/off against the target ≥ 0.9, and
 * what the revisions cost in rows and bytes per thousand writes (the table and its index, measured
 * on the revisions the history side wrote during the group). The history side is checked to have
 * written a revision per write, so a side that recorded nothing cannot pass for a cheap one.
 */
export async function measureHistoryCostGroup(
  options: BenchOptions,
  databaseUrl: string,
  runId: string,
  log: (line: string) => void,
  load: () => string,
): Promise<ResultRow[]> {
  const filesDir = mkdtempSync(join(tmpdir(), 'tenantry-bench-history-'));
  const servers: ServerProcess[] = [];
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    const settings = (side: string): ServiceSettings => ({
      databaseUrl,
      poolSize: options.poolSize,
      runId: `${runId}${side}`,
      rowsPerTenant: Math.max(options.rowsPerTenant, PATCHED_ROWS),
      notifications: 1,
      wrongPasswordAccounts: 1,
      filesDir: join(filesDir, side),
      maxUploadBytes: 1024 * 1024,
    });
    // Started one after the other: each seeds its tenants and runs its migrations check alone.
    const off = await startServer('service-history-off', './service.ts', settings('hoff'), [], {
      TENANTRY_BENCH_HISTORY: 'off',
    });
    servers.push(off);
    const on = await startServer('service-history-on', './service.ts', settings('hon'), [], {
      TENANTRY_BENCH_HISTORY: 'on',
    });
    servers.push(on);

    const sides = await Promise.all(
      [off, on].map(async (service) => {
        const seed = service.ready.seed as SeedInfo;
        const tenant = seed.tenants[0]!;
        const cookie = await signIn(service.port, tenant.host, seed.email, BENCH_PASSWORD);
        const check = await send(service.port, {
          method: 'GET',
          path: `${WIDGETS}?limit=1`,
          host: tenant.host,
          headers: { cookie },
        });
        if (check.status !== 200)
          throw new Error(`${service.name}: GET ${WIDGETS} answered ${check.status}: ${check.body.slice(0, 300)}`);
        return { service, tenantId: tenant.id, host: tenant.host, cookie, at: `http://127.0.0.1:${service.port}` };
      }),
    );
    const [offSide, onSide] = sides as [(typeof sides)[number], (typeof sides)[number]];
    log(
      `history: widget history off on port ${off.port}, on on port ${on.port}; PATCHes spread over ${PATCHED_ROWS} seeded widgets; load average ${load()}`,
    );

    const revisionsOf = async (tenantId: string) =>
      Number(
        (await pool.query<{ n: string }>('select count(*) as n from revisions where tenant_id = $1', [tenantId]))
          .rows[0]!.n,
      );
    const revisionBytes = async () =>
      Number(
        (await pool.query<{ bytes: string }>(`select pg_total_relation_size('revisions') as bytes`)).rows[0]!.bytes,
      );

    const plan: Plan = {
      connections: options.connections,
      warmupSeconds: options.warmupSeconds,
      seconds: options.seconds,
      rounds: options.rounds,
      log,
    };
    const pids = { service: on.pid, baseline: off.pid };
    const settle = async () => {
      const a = await on.ask({ type: 'drain' }, 'drained', 150_000);
      const b = await off.ask({ type: 'drain' }, 'drained', 150_000);
      return { ms: a.ms + b.ms, eventsMs: Math.max(a.eventsMs, b.eventsMs) };
    };
    const json = (side: typeof onSide) => ({
      host: side.host,
      cookie: side.cookie,
      'content-type': 'application/json',
    });
    const patchOf = (side: typeof onSide) => ({
      url: side.at + WIDGETS,
      method: 'PATCH' as const,
      headers: json(side),
      paths: seededIds(side.tenantId, PATCHED_ROWS).map((id) => `${WIDGETS}/${id}`),
      // Every PATCH changes the size (recorded) and the note (not recorded): never a no-op.
      bodyOf: (n: number) => `{"size":${n % 1000},"note":"patched ${n}"}`,
    });
    const pairs: Pair[] = [
      {
        name: 'create-history-on',
        pids,
        settle,
        service: { url: onSide.at + WIDGETS, method: 'POST', headers: json(onSide), body: CREATE_BODY },
        baseline: { url: offSide.at + WIDGETS, method: 'POST', headers: json(offSide), body: CREATE_BODY },
      },
      { name: 'patch-history-on', pids, settle, service: patchOf(onSide), baseline: patchOf(offSide) },
    ];

    const rows: ResultRow[] = [];
    const revisionsBefore = await revisionsOf(onSide.tenantId);
    const bytesBefore = await revisionBytes();
    for (const pair of pairs) {
      const operation = pair.name.replace('-history-on', '');
      log(
        `${operation} with history on and off: ${options.connections} connections, warm-up ${options.warmupSeconds} s, ${options.rounds} × ${options.seconds} s each side, alternating (load average ${load()})`,
      );
      const before = await revisionsOf(onSide.tenantId);
      const noneBefore = await revisionsOf(offSide.tenantId);
      const figures = await measurePair(pair, plan);
      // The history side recorded a revision per write (warm-up included); the other side none.
      const recorded = (await revisionsOf(onSide.tenantId)) - before;
      if (recorded < figures.service.requests)
        throw new Error(
          `history: the history side recorded ${recorded} revisions during ${operation}, fewer than the ${figures.service.requests} writes it answered`,
        );
      if ((await revisionsOf(offSide.tenantId)) !== noneBefore)
        throw new Error(`history: the side without history recorded revisions during ${operation}`);
      const ratio = figures.service.rps / figures.baseline.rps;
      log(
        `  ${operation}: history on ${figures.service.rps.toFixed(0)} req/s, off ${figures.baseline.rps.toFixed(0)} req/s: ${ratio.toFixed(3)}× (target ≥ ${TARGET}); ${recorded} revisions written`,
      );
      const pick = (f: typeof figures.service) => ({
        rps: f.rps,
        p50_ms: f.p50_ms,
        p99_ms: f.p99_ms,
        samples: f.requests,
      });
      rows.push({
        name: pair.name,
        ...pick(figures.service),
        ratio_to_baseline: ratio,
        baseline: `${operation} with widget history off (same run, alternating rounds)`,
        target: `≥ ${TARGET}× history off`,
        met: ratio >= TARGET,
      });
      rows.push({ name: `${operation}-history-off`, ...pick(figures.baseline), ratio_to_baseline: 1 });
    }
    // What the revisions cost: rows and bytes (heap, TOAST and both indexes) per thousand writes.
    const written = (await revisionsOf(onSide.tenantId)) - revisionsBefore;
    const bytes = (await revisionBytes()) - bytesBefore;
    const perThousand = (bytes / written) * 1000;
    log(
      `  revisions: ${written} written, ${(bytes / 1024 / 1024).toFixed(1)} MiB: ${(perThousand / 1024).toFixed(0)} KiB and 1000 rows per thousand writes`,
    );
    rows.push({
      name: 'history-revision-bytes-per-1000-writes',
      rps: null,
      p50_ms: null,
      p99_ms: null,
      ratio_to_baseline: null,
      samples: written,
      bytes_per_1000_writes: Math.round(perThousand),
    });
    return rows;
  } finally {
    await pool.end();
    await Promise.allSettled(servers.map((s) => s.stop()));
    rmSync(filesDir, { recursive: true, force: true });
  }
}
