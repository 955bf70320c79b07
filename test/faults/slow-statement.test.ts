import { beforeAll, describe, expect, it } from 'vitest';
import Type from 'typebox';
import { sql } from 'kysely';
import { createCustomer } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { testConfig } from '../helpers/config.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { allModules } from '../../modules/index.ts';
import { defineModule, defineRoute } from '../../framework/entity/define.ts';
import { APP_ROLE } from '../../framework/context/opening.ts';

/**
 * Fault: a slow statement (issue 31, point 6). A statement past `database.statement_timeout_ms` is
 * cancelled by PostgreSQL, the request's transaction rolls back (its earlier write is not kept),
 * the client gets 503 DB_TIMEOUT with Retry-After, and every connection returns to the pool.
 */

const TIMEOUT_MS = 200;
const POOL_SIZE = 3;
const HOST = 'slow.localhost';
// A table of the test's own (made below), written before the sleep: after the timeout it must be empty.
const MARKS = 'fault_slow_marks';

const slowModule = defineModule({
  name: 'slowkit',
  routes: [
    defineRoute({
      method: 'POST',
      url: '/api/v1/slowkit/sleep',
      operationId: 'slowkitSleep',
      summary: 'Writes a mark, then sleeps in PostgreSQL for the given milliseconds',
      access: 'public',
      schema: {
        body: Type.Object(
          { ms: Type.Integer({ minimum: 0, maximum: 5000 }), mark: Type.String({ maxLength: 40 }) },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ slept: Type.Integer() }) },
      },
      handler: async ({ tx, body }) => {
        await sql`insert into ${sql.table(MARKS)} (mark) values (${body.mark})`.execute(tx.db);
        await sql`select pg_sleep(${body.ms / 1000})`.execute(tx.db);
        return { slept: body.ms };
      },
    }),
  ],
});

const t = useTestApp({
  modules: [...allModules, testkitModule, slowModule],
  config: testConfig({ database: { pool_size: POOL_SIZE, statement_timeout_ms: TIMEOUT_MS } }),
});

beforeAll(async () => {
  await createCustomer(t.app, 'slow');
  await t.app.services.db.pool.query(`create table ${MARKS} (mark text not null)`);
  await t.app.services.db.pool.query(`grant select, insert on ${MARKS} to ${APP_ROLE}`);
});

const sleep = (ms: number, mark: string) => t.app.http(HOST).post('/api/v1/slowkit/sleep').send({ ms, mark });
const marks = async (mark: string) =>
  (await t.app.services.db.pool.query(`select count(*) as n from ${MARKS} where mark = $1`, [mark])).rows[0]
    .n as number;
const poolCounts = () => {
  const { totalCount, idleCount, waitingCount } = t.app.services.db.pool;
  return { totalCount, idleCount, waitingCount };
};

describe('a statement past database.statement_timeout_ms', () => {
  it('a statement within the limit runs and commits', async () => {
    const res = await sleep(10, 'quick');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await marks('quick')).toBe(1);
  });

  it('is cancelled by PostgreSQL: 503 DB_TIMEOUT with Retry-After, the transaction rolled back', async () => {
    const started = performance.now();
    const res = await sleep(3000, 'slow');
    // Cancelled at the limit, well before the sleep would end.
    expect(performance.now() - started).toBeLessThan(2000);
    expect(res.status, JSON.stringify(res.body)).toBe(503);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.code).toBe('DB_TIMEOUT');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    // The mark written before the slow statement was not kept.
    expect(await marks('slow')).toBe(0);
  });

  it('leaks no connection: after more timed-out requests than the pool holds, every connection is back and serves', async () => {
    await sleep(10, 'warm');
    const before = poolCounts();
    const answers = await Promise.all(Array.from({ length: POOL_SIZE * 2 }, (_, i) => sleep(3000, `burst-${i}`)));
    expect(answers.map((a) => a.body.code)).toEqual(Array(POOL_SIZE * 2).fill('DB_TIMEOUT'));
    const after = poolCounts();
    expect(after.waitingCount).toBe(0);
    expect(after.idleCount).toBe(after.totalCount);
    expect(after.totalCount).toBeLessThanOrEqual(POOL_SIZE);
    expect(after.totalCount).toBeGreaterThanOrEqual(before.totalCount);
    // The connections the cancellations left are whole: a full pool's worth of requests succeeds at once.
    const next = await Promise.all(Array.from({ length: POOL_SIZE }, (_, i) => sleep(10, `after-${i}`)));
    expect(next.map((a) => a.status)).toEqual(Array(POOL_SIZE).fill(200));
    expect(poolCounts().idleCount).toBe(poolCounts().totalCount);
  });
});
