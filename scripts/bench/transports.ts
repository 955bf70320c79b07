/**
 * A targeted bench of the transports a one-exchange write can take, with no HTTP in the way:
 * the same transaction (BEGIN, a set_config like the opening statement's with its guard column,
 * an insert, COMMIT) sent by each transport, beside the bare insert (one statement, no transaction). Run:
 *
 *   node scripts/bench/transports.ts [--seconds 5] [--concurrency 16] [--pool 8] [--rounds 2]
 *
 * It starts an embedded PostgreSQL of its own, runs every transport for the given seconds in
 * turn, `rounds` times (interleaved, so a change in the machine's load falls on all of them), and
 * prints each transport's transactions per second, its ratio to the bare insert of the same
 * round and the client process's CPU per transaction (steadier than throughput on a loaded
 * machine). Figures on a shared machine are rough: compare them only within one run.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import postgres from 'postgres';
import { openBenchDatabase } from './database.ts';
import { PipelinedConnection } from '../../framework/db/pipelined.ts';
import { GatheringClient } from '../../framework/db/gathering-client.ts';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '16' },
    pool: { type: 'string', default: '8' },
    rounds: { type: 'string', default: '2' },
    only: { type: 'string', default: '' },
  },
});
const seconds = Number(args.seconds);
const concurrency = Number(args.concurrency);
const poolSize = Number(args.pool);
const rounds = Number(args.rounds);

const SETUP = `
create table if not exists probe (id uuid primary key default gen_random_uuid(), tenant uuid not null, name text not null, size int not null);
`;
// The opening statement with its guard column, as the request path sends it (context/opening.ts).
const OPEN = `select set_config('app.tenant_id', $1::uuid::text, true) as t, set_config('app.permissions', 'widget.write', true) as p,
  case when string_to_array(current_setting('app.permissions', true), ',') && array['widget.write', '*'] then true
       else set_config('transaction_read_only', 'on', true) = '' end as allowed`;
const INSERT = `insert into probe (tenant, name, size) values ($1, $2, $3) returning id, name, size`;
const TENANT = '0190b7a0-0000-7000-8000-000000000001';

type Run = () => Promise<unknown>;
interface Transport {
  name: string;
  open(url: string): Promise<{ run: Run; close(): Promise<void> }>;
}

let n = 0;
const insertValues = () => [TENANT, `probe-${n++}`, 7];

const transports: Transport[] = [
  {
    name: 'bare insert (pg)',
    async open(url) {
      const pool = new pg.Pool({ connectionString: url, max: poolSize });
      return {
        run: () => pool.query({ name: 'insert', text: INSERT, values: insertValues() }),
        close: () => pool.end(),
      };
    },
  },
  {
    name: 'pg pipeline mode',
    async open(url) {
      const pool = new pg.Pool({ connectionString: url, max: poolSize, pipeline: true, Client: GatheringClient });
      const run = async () => {
        const client = await pool.connect();
        try {
          const connection = new PipelinedConnection(client);
          const answers = await connection.transaction([
            { text: OPEN, values: [TENANT], name: 'open' },
            { text: INSERT, values: insertValues(), name: 'insert' },
          ]);
          if (!answers.every((a) => a.ok)) throw new Error('failed');
        } finally {
          client.release();
        }
      };
      return { run, close: () => pool.end() };
    },
  },
  {
    name: 'postgres.js sql.begin([...])',
    async open(url) {
      const sql = postgres(url, { max: poolSize, onnotice: () => {} });
      const run = () =>
        sql.begin((tx) => [
          tx.unsafe(OPEN, [TENANT], { prepare: true }),
          tx.unsafe(INSERT, insertValues(), { prepare: true }),
        ]);
      return { run, close: () => sql.end() };
    },
  },
  {
    name: 'postgres.js reserve(), pipelined',
    async open(url) {
      const sql = postgres(url, { max: poolSize, onnotice: () => {} });
      const run = async () => {
        const reserved = await sql.reserve();
        try {
          await Promise.all([
            reserved.unsafe('begin'),
            reserved.unsafe(OPEN, [TENANT], { prepare: true }),
            reserved.unsafe(INSERT, insertValues(), { prepare: true }),
            reserved.unsafe('commit'),
          ]);
        } finally {
          reserved.release();
        }
      };
      return { run, close: () => sql.end() };
    },
  },
];

async function measure(run: Run): Promise<{ rate: number; cpuUs: number }> {
  // Warm up: every connection prepares its statements.
  await Promise.all(Array.from({ length: concurrency }, () => run()));
  let done = 0;
  const cpu = process.cpuUsage();
  const until = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        await run();
        done++;
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  return { rate: done / seconds, cpuUs: (used.user + used.system) / done };
}

async function main(): Promise<void> {
  const db = await openBenchDatabase(process.env.BENCH_DATABASE_URL ?? '');
  try {
    const setup = new pg.Client({ connectionString: db.url });
    await setup.connect();
    await setup.query(SETUP);
    await setup.end();
    const chosen = transports.filter((t) => !args.only || t.name === transports[0]!.name || t.name.includes(args.only));
    const figures = new Map<string, number[]>();
    for (let round = 0; round < rounds; round++) {
      let bare = 0;
      for (const transport of chosen) {
        const opened = await transport.open(db.url);
        const { rate, cpuUs } = await measure(opened.run);
        await opened.close();
        if (transport === transports[0]) bare = rate;
        const ratio = rate / bare;
        (figures.get(transport.name) ?? figures.set(transport.name, []).get(transport.name)!).push(ratio);
        console.log(
          `round ${round + 1}  ${transport.name.padEnd(34)} ${rate.toFixed(0).padStart(6)} tx/s  ${ratio.toFixed(3)}× bare  client CPU ${cpuUs.toFixed(0)} µs/tx`,
        );
      }
    }
    console.log('');
    for (const [name, ratios] of figures)
      console.log(
        `${name.padEnd(34)} median ${ratios.sort((a, b) => a - b)[Math.floor(ratios.length / 2)]!.toFixed(3)}× bare`,
      );
  } finally {
    await db.stop();
  }
}

await main();
