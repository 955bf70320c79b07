import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CompiledQuery } from 'kysely';
import { useTestApp } from '../helpers/use-test-app.ts';
import { signInAs } from '../helpers/app.ts';
import pg from 'pg';

/**
 * Issue 48, point 2: an export's memory is flat in the row count. 1,000,000 rows (seeded by SQL)
 * sent as CSV over a socket grow this process's RSS by less than 64 MiB: the rows are read in
 * batches by keyset, each batch written before the next is read. A memory test (MEMORY in
 * test/helpers/test-kinds.ts): it runs after every other file, alone.
 */

const MiB = 1024 * 1024;
const ROWS = 1_000_000;
const HOST = 'acme.localhost';
const t = useTestApp({ customers: ['acme'] });
let cookie: string;
let port: number;

beforeAll(async () => {
  cookie = (await signInAs(t.app, t.acme, ['widget:read'])).cookie;
  await t.app.services.transactions.run(t.acme, async (ctx) => {
    await ctx.db.executeQuery(CompiledQuery.raw('set local statement_timeout = 0'));
    await ctx.db.executeQuery(
      CompiledQuery.raw(
        `insert into widgets (name, size, color, note)
           select 'widget ' || i, i % 1000, 'bulk', 'a note of some length for row ' || i from generate_series(1, ${ROWS}) i`,
      ),
    );
  });
  // The planner's statistics of the new rows, as autovacuum would gather them (the database's owner may).
  const owner = new pg.Client({ connectionString: t.app.databaseUrl });
  await owner.connect();
  await owner.query('analyze widgets').finally(() => owner.end());
  await t.app.web!.listen({ host: '127.0.0.1', port: 0 });
  port = (t.app.web!.server.address() as AddressInfo).port;
}, 600_000);

afterAll(async () => {
  await t.app.web!.close();
});

/** Reads the export to its end, counting its lines, while sampling RSS every 20 ms: the peak growth in MiB. */
async function exportMeasuringMemory(path: string): Promise<{ status: number; lines: number; growth: number }> {
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  try {
    const answer = await new Promise<{ status: number; lines: number }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path, headers: { host: HOST, cookie } }, (res) => {
        let lines = 0;
        res.on('data', (chunk: Buffer) => {
          for (let i = chunk.indexOf(0x0a); i !== -1; i = chunk.indexOf(0x0a, i + 1)) lines++;
        });
        res.on('end', () => resolve({ status: res.statusCode!, lines }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });
    return { ...answer, growth: (peak - before) / MiB };
  } finally {
    clearInterval(sampler);
  }
}

describe('an export of 1,000,000 rows', () => {
  it('sends every row with RSS growth under 64 MiB', async () => {
    // A small export first: what the first export loads once (code, prepared statements) is not per row.
    const warm = await exportMeasuringMemory('/api/v1/testkit/widgets?format=csv&size=eq.1');
    expect(warm.lines).toBe(ROWS / 1000 + 1);
    const whole = await exportMeasuringMemory('/api/v1/testkit/widgets?format=csv&color=eq.bulk');
    expect(whole.status).toBe(200);
    expect(whole.lines).toBe(ROWS + 1);
    console.log(`export of ${ROWS} rows: RSS grew ${whole.growth.toFixed(1)} MiB at most`);
    expect(whole.growth).toBeLessThan(64);
  }, 900_000);
});
