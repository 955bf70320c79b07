import pg from 'pg';
import type { BenchOptions } from './options.ts';
import type { ResultRow } from './report.ts';
import { measureLogged, pairRows, withTwoServices, type Side } from './two-services.ts';

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
 * `--only history`: what history costs a write. Two service processes (two-services.ts),
 * identical but for TENANTRY_BENCH_HISTORY: on
 * one the test kit's widget keeps history (every create and PATCH writes a revision in its
 * transaction), on the other it is declared `history: false`. Create and PATCH (a new size and
 * note on one of 1,000 seeded widgets at random) are measured on both in alternating rounds.
 * Reported: each side's req/s and latency, on/off against the target ≥ 0.9, and
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
  const spec = {
    group: 'history',
    baseline: { name: 'service-history-off', runSuffix: 'hoff', env: { TENANTRY_BENCH_HISTORY: 'off' } },
    service: { name: 'service-history-on', runSuffix: 'hon', env: { TENANTRY_BENCH_HISTORY: 'on' } },
    checkPath: `${WIDGETS}?limit=1`,
    rowsPerTenant: Math.max(options.rowsPerTenant, PATCHED_ROWS),
  };
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  // An idle connection the server ends (57P01) is replaced at the next query, not an uncaught 'error' event.
  pool.on('error', (err) => log(`history: an idle database connection closed (${err.message})`));
  try {
    return await withTwoServices(options, databaseUrl, runId, log, spec, async (two) => {
      const { baseline: offSide, service: onSide, plan, pairOf } = two;
      log(
        `history: widget history off on port ${offSide.service.port}, on on port ${onSide.service.port}; PATCHes spread over ${PATCHED_ROWS} seeded widgets; load average ${load()}`,
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

      const json = (side: Side) => ({
        host: side.host,
        cookie: side.cookie,
        'content-type': 'application/json',
      });
      const patchOf = (side: Side) => ({
        url: side.at + WIDGETS,
        method: 'PATCH' as const,
        headers: json(side),
        paths: seededIds(side.tenantId, PATCHED_ROWS).map((id) => `${WIDGETS}/${id}`),
        // Every PATCH changes the size (recorded) and the note (not recorded): never a no-op.
        bodyOf: (n: number) => `{"size":${n % 1000},"note":"patched ${n}"}`,
      });
      const createOf = (side: Side) => ({
        url: side.at + WIDGETS,
        method: 'POST' as const,
        headers: json(side),
        body: CREATE_BODY,
      });
      const pairs = [
        pairOf('create-history-on', { service: createOf(onSide), baseline: createOf(offSide) }),
        pairOf('patch-history-on', { service: patchOf(onSide), baseline: patchOf(offSide) }),
      ];

      const rows: ResultRow[] = [];
      const revisionsBefore = await revisionsOf(onSide.tenantId);
      const bytesBefore = await revisionBytes();
      for (const pair of pairs) {
        const operation = pair.name.replace('-history-on', '');
        const before = await revisionsOf(onSide.tenantId);
        const noneBefore = await revisionsOf(offSide.tenantId);
        const { figures, ratio } = await measureLogged(pair, plan, `${operation} with history on and off`, load);
        // The history side recorded a revision per write (warm-up included); the other side none.
        const recorded = (await revisionsOf(onSide.tenantId)) - before;
        if (recorded < figures.service.requests)
          throw new Error(
            `history: the history side recorded ${recorded} revisions during ${operation}, fewer than the ${figures.service.requests} writes it answered`,
          );
        if ((await revisionsOf(offSide.tenantId)) !== noneBefore)
          throw new Error(`history: the side without history recorded revisions during ${operation}`);
        log(
          `  ${operation}: history on ${figures.service.rps.toFixed(0)} req/s, off ${figures.baseline.rps.toFixed(0)} req/s: ${ratio.toFixed(3)}× (target ≥ ${TARGET}); ${recorded} revisions written`,
        );
        rows.push(
          ...pairRows(
            { service: pair.name, baseline: `${operation}-history-off` },
            figures,
            ratio,
            `${operation} with widget history off (same run, alternating rounds)`,
            { min: TARGET, words: `≥ ${TARGET}× history off` },
          ),
        );
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
    });
  } finally {
    await pool.end();
  }
}
