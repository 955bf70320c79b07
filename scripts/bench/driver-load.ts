import pg from 'pg';
import postgres from 'postgres';
import { ENTER_WITH_SESSION, permissionPredicate } from '../../framework/context/tx.ts';
import { GatheringClient } from '../../framework/db/gathering-client.ts';
import { percentile } from './load.ts';
import { serverCpu, serverCpuSince } from './throughput.ts';
import { SETTINGS_ENV } from './protocol.ts';

/**
 * One side of the driver comparison (drivers.ts), in its own process: `connections` callers, each
 * running the list request's database work in a loop on a pool of `poolSize` connections, for
 * `seconds`. The work is the request path's: BEGIN, the opening statement (tenant, role, session,
 * permissions), the widget list whose WHERE checks the permission, COMMIT — prepared statements,
 * the same texts on every side. Only how they reach PostgreSQL differs:
 * - pg-own-socket: pg in pipeline mode, the batch gathered into one write by corking a socket the
 *   framework's GatheringClient made and gave pg (`stream` option; framework/db/gathering-client.ts):
 *   the request path's transport (framework/db/pipelined.ts);
 * - pg-pipeline: pipeline mode alone, one write per statement, one round trip;
 * - postgres.js: a reserved Postgres.js connection, the four queries issued together (it gathers a
 *   tick's messages into one write itself);
 * - postgres.js-begin: Postgres.js's documented pipelining, `sql.begin(sql => [...])`: the BEGIN
 *   answered first, the statements of the array together, then the COMMIT (three round trips);
 * - pg-3-exchanges: the request path before one exchange: BEGIN with the opening statement, then
 *   the list, then COMMIT, each waiting for the previous answer.
 */

export const DRIVER_VARIANTS = [
  'pg-own-socket',
  'pg-pipeline',
  'postgres.js',
  'postgres.js-begin',
  'pg-3-exchanges',
] as const;
export type DriverVariant = (typeof DRIVER_VARIANTS)[number];

export interface DriverLoadSettings {
  variant: DriverVariant;
  databaseUrl: string;
  poolSize: number;
  connections: number;
  warmupSeconds: number;
  seconds: number;
  tenantId: string;
  /** SHA-256 of the signed-in bench user's session id, hex. */
  sessionHash: string;
  /** The embedded server's postmaster, for PostgreSQL's CPU per transaction (while this side's connections live). */
  postmasterPid?: number;
}

export interface DriverLoadResult {
  variant: DriverVariant;
  transactions: number;
  seconds: number;
  p50_ms: number;
  p99_ms: number;
  /** CPU time of this (client) process per transaction, microseconds. */
  cpuUs: number;
  /** CPU time of PostgreSQL (all its processes) per transaction, microseconds; NaN for a given database. */
  pgCpuUs: number;
}

const COLUMNS = '"id", "created_at", "updated_at", "name", "size", "note", "color", "approved", "approved_at"';
const CAN_READ = permissionPredicate('widget:read');
// The service's list of widgets (framework/operations/paging.ts for the testkit entity), permission check included.
const LIST = `select ${COLUMNS}, "created_at"::text as "__sort", id as "__id", (select count(*) from (select 1 from "widgets" where deleted_at is null and ${CAN_READ} order by "created_at", id limit 10001) capped) as "__total"
  from "widgets"
 where deleted_at is null
   and ${CAN_READ}
 order by "created_at" asc, id asc
 limit $1 offset $2`;

type Statement = { name: string; text: string; values: unknown[] };

/** One transaction's statements: the same for every variant. */
function statements(settings: DriverLoadSettings): Statement[] {
  return [
    { name: 'bench_begin', text: 'begin', values: [] },
    {
      name: 'bench_open',
      text: ENTER_WITH_SESSION,
      values: [settings.tenantId, Buffer.from(settings.sessionHash, 'hex'), new Date()],
    },
    { name: 'bench_list', text: LIST, values: [21, 0] },
    { name: 'bench_commit', text: 'commit', values: [] },
  ];
}

type Transaction = () => Promise<number>;

function pgVariant(settings: DriverLoadSettings): { run: Transaction; end(): Promise<void> } {
  const own = settings.variant === 'pg-own-socket';
  const pool = new pg.Pool({
    connectionString: settings.databaseUrl,
    max: settings.poolSize,
    pipeline: true,
    ...(own ? { Client: GatheringClient } : {}),
  });
  // An idle connection the server ends (57P01) is replaced at the next query, not an uncaught 'error' event.
  pool.on('error', (err) => process.stderr.write(`driver-load: an idle database connection closed (${err.message})\n`));
  const send = (client: pg.PoolClient, s: Statement) => client.query({ name: s.name, text: s.text, values: s.values });
  const together = (client: pg.PoolClient, batch: Statement[]) => {
    const stream = settings.variant === 'pg-own-socket' ? (client as unknown as GatheringClient).socket : undefined;
    stream?.cork();
    try {
      return Promise.all(batch.map((s) => send(client, s)));
    } finally {
      stream?.uncork();
    }
  };
  const run: Transaction = async () => {
    const client = await pool.connect();
    try {
      const batch = statements(settings);
      if (settings.variant === 'pg-3-exchanges') {
        // The request path before one exchange: BEGIN with the opening statement, the list, COMMIT.
        await together(client, batch.slice(0, 2));
        const list = await send(client, batch[2]!);
        await send(client, batch[3]!);
        return list.rows.length;
      }
      const answers = await together(client, batch);
      return answers[2]!.rows.length;
    } finally {
      client.release();
    }
  };
  return { run, end: () => pool.end() };
}

function postgresJsVariant(settings: DriverLoadSettings): { run: Transaction; end(): Promise<void> } {
  const sql = postgres(settings.databaseUrl, { max: settings.poolSize, prepare: true, onnotice: () => {} });
  if (settings.variant === 'postgres.js-begin') {
    // The opening statement and the list in the array; BEGIN and COMMIT are sql.begin's own.
    const run: Transaction = async () => {
      const answers = await sql.begin((tx) =>
        statements(settings)
          .slice(1, 3)
          .map((s) => tx.unsafe(s.text, s.values as never[], { prepare: true })),
      );
      return (answers[1] as unknown[]).length;
    };
    return { run, end: () => sql.end() };
  }
  const run: Transaction = async () => {
    const reserved = await sql.reserve();
    try {
      // Queries on one connection are written together (the driver gathers a tick's messages) and answered in order.
      const answers = await Promise.all(
        statements(settings).map((s) => reserved.unsafe(s.text, s.values as never[], { prepare: true })),
      );
      return answers[2]!.length;
    } finally {
      reserved.release();
    }
  };
  return { run, end: () => sql.end() };
}

async function loop(
  run: Transaction,
  connections: number,
  seconds: number,
): Promise<{ latencies: number[]; elapsed: number }> {
  const latencies: number[] = [];
  const started = performance.now();
  const until = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < until) {
        const t = performance.now();
        const rows = await run();
        if (rows !== 21)
          throw new Error(`the list answered ${rows} rows, not 21: the statements do not measure the request`);
        latencies.push(performance.now() - t);
      }
    }),
  );
  return { latencies, elapsed: (performance.now() - started) / 1000 };
}

export async function measureDriver(settings: DriverLoadSettings): Promise<DriverLoadResult> {
  const side = settings.variant.startsWith('postgres.js') ? postgresJsVariant(settings) : pgVariant(settings);
  try {
    await loop(side.run, settings.connections, settings.warmupSeconds);
    const cpu = process.cpuUsage();
    const pgBefore = settings.postmasterPid ? serverCpu(settings.postmasterPid) : undefined;
    const { latencies, elapsed } = await loop(side.run, settings.connections, settings.seconds);
    const used = process.cpuUsage(cpu);
    const pgCpuMs =
      settings.postmasterPid && pgBefore ? serverCpuSince(pgBefore, serverCpu(settings.postmasterPid)) : Number.NaN;
    const sorted = Float64Array.from(latencies).sort();
    return {
      variant: settings.variant,
      transactions: latencies.length,
      seconds: elapsed,
      p50_ms: percentile(sorted, 50),
      p99_ms: percentile(sorted, 99),
      cpuUs: (used.user + used.system) / latencies.length,
      pgCpuUs: (1000 * pgCpuMs) / latencies.length,
    };
  } finally {
    await side.end();
  }
}

if (process.send && process.env[SETTINGS_ENV]) {
  const settings = JSON.parse(process.env[SETTINGS_ENV]) as DriverLoadSettings;
  measureDriver(settings).then(
    (result) => process.send!({ type: 'driver-result', result }, () => process.exit(0)),
    (err: Error) => process.send!({ type: 'failed', error: err.stack ?? err.message }, () => process.exit(1)),
  );
}
