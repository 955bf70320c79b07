/** One line of bench-results.json. */
export interface ResultRow {
  name: string;
  rps: number | null;
  p50_ms: number | null;
  p99_ms: number | null;
  ratio_to_baseline: number | null;
  /** What the ratio is taken against, when it is not the bare baseline server. */
  baseline?: string;
  target?: string;
  met?: boolean;
  samples?: number;
  /** Upload scenario: megabytes (10^6 bytes) per second, and the service's RSS growth during one upload. */
  mb_per_s?: number;
  rss_growth_mib?: number;
  /** Driver comparison: CPU per transaction of the client process and of PostgreSQL (µs), and each round's tx/s. */
  client_cpu_us?: number;
  postgres_cpu_us?: number;
  rounds_rps?: number[];
  /** Open-loop runs: the fixed request rate sent, and the 99.9th percentile beside p50 and p99. */
  rate?: number;
  p999_ms?: number;
  /** The slowest catch-up of the worker after a create run: every event relayed and audited. */
  audit_drain_ms?: number;
  /** History scenario: what the revisions of a thousand writes take (heap, TOAST and indexes), in bytes. */
  bytes_per_1000_writes?: number;
  /** Login throughput divided by the machine's cores. */
  rps_per_core?: number;
  /** Rows in the listed tenant's table, for the list measured at several sizes (and the tasks of list-filtered). */
  table_rows?: number;
  /** Tenants scenario (scripts/bench/tenants.ts): the size, hosts served and cached, a job's runs, its worker's peak RSS, subscriptions renewed and charged twice. */
  tenants?: number;
  hosts?: number;
  hosts_cached?: number;
  runs?: number;
  rss_peak_mib?: number;
  renewed?: number;
  double_charged?: number;
  /** billing-renew: bench subscriptions due before the run, still due after it, whether every one due was renewed, and the run's slot. */
  due_before?: number;
  still_due?: number;
  every_due_renewed?: boolean;
  slot?: string;
  /** Live scenario (scripts/bench/live.ts): streams open, database statements per live batch, batches, the service's RSS. */
  streams?: number;
  statements_per_batch?: number;
  batches?: number;
  rss_mib?: number;
  /** Live scenario: the web process's CPU time over a step, in % of one core. */
  cpu_percent?: number;
  /** Live scenario: creates the service refused (503, every connection busy) at the step's rate. */
  refused?: number;
  /**
   * Live scenario, the list beside the streams: CPU ms per list request answered, by process (web,
   * postgres, service, readers, bench, machine), with the streams open and with none.
   */
  cpu_ms_per_request?: { with_streams: Record<string, number>; with_none: Record<string, number> };
  /** Live scenario, the list beside the streams: each round's list beside them and with none open, and their ratio. */
  rounds?: { with_rps: number; none_rps: number; ratio: number }[];
}

const round = (value: number | null, digits: number): number | null =>
  value === null || Number.isNaN(value) ? null : Number(value.toFixed(digits));

export function rounded(row: ResultRow): ResultRow {
  return {
    ...row,
    rps: round(row.rps, 0),
    p50_ms: round(row.p50_ms, 2),
    p99_ms: round(row.p99_ms, 2),
    ratio_to_baseline: round(row.ratio_to_baseline, 3),
    ...(row.mb_per_s !== undefined ? { mb_per_s: round(row.mb_per_s, 1)! } : {}),
    ...(row.rss_growth_mib !== undefined ? { rss_growth_mib: round(row.rss_growth_mib, 1)! } : {}),
    ...(row.client_cpu_us !== undefined ? { client_cpu_us: round(row.client_cpu_us, 0)! } : {}),
    ...(row.postgres_cpu_us !== undefined ? { postgres_cpu_us: round(row.postgres_cpu_us, 0)! } : {}),
    ...(row.rate !== undefined ? { rate: round(row.rate, 0)! } : {}),
    ...(row.p999_ms !== undefined ? { p999_ms: round(row.p999_ms, 2)! } : {}),
    ...(row.audit_drain_ms !== undefined ? { audit_drain_ms: round(row.audit_drain_ms, 0)! } : {}),
    ...(row.rps_per_core !== undefined ? { rps_per_core: round(row.rps_per_core, 1)! } : {}),
    ...(row.rss_peak_mib !== undefined ? { rss_peak_mib: round(row.rss_peak_mib, 1)! } : {}),
    ...(row.statements_per_batch !== undefined ? { statements_per_batch: round(row.statements_per_batch, 2)! } : {}),
    ...(row.rss_mib !== undefined ? { rss_mib: round(row.rss_mib, 1)! } : {}),
  };
}

const cell = (value: number | null | undefined, digits: number) =>
  value === null || value === undefined ? '—' : value.toFixed(digits);

/** The table printed at the end of a run. */
export function formatTable(rows: ResultRow[]): string {
  const header = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'MB/s', 'RSS+ MiB', 'ratio', 'target', ''];
  const lines = rows.map((r) => [
    r.audit_drain_ms !== undefined ? `${r.name} (${cell(r.audit_drain_ms, 0)} ms)` : r.name,
    cell(r.rps ?? r.rate, 0),
    cell(r.p50_ms, 2),
    cell(r.p99_ms, 2),
    cell(r.p999_ms, 2),
    cell(r.mb_per_s, 0),
    cell(r.rss_growth_mib, 1),
    cell(r.ratio_to_baseline, 3),
    r.target ?? '',
    r.met === undefined ? '' : r.met ? 'met' : 'NOT MET',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const format = (cols: string[]) =>
    cols
      .map((c, i) => (i === 0 || i >= 8 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [format(header), format(widths.map((w) => '-'.repeat(w))), ...lines.map(format)].join('\n');
}
