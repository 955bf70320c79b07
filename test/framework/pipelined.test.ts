import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../helpers/database.ts';
import { openDatabase, type Db } from '../../framework/db/pool.ts';
import { CompiledQuery } from 'kysely';
import { deferred, exchange, prepared, statementName } from '../../framework/db/statements.ts';
import { BEGIN, COMMIT, PipelinedConnection, issue, settle } from '../../framework/db/pipelined.ts';
import type { GatheringClient } from '../../framework/db/gathering-client.ts';

// One connection: every exchange runs on the session the one before it used, so a statement left
// half-prepared, a setting that outlived its transaction or a transaction left open would show.
let db: Db;

const SET = prepared(`select set_config('app.batch_probe', $1, true) as v`);
const READ = prepared(`select current_setting('app.batch_probe', true) as v, now() = statement_timestamp() as fresh`);
const INSERT = prepared('insert into probes (n) values ($1)');
const INSERT_RETURNING = prepared('insert into probes (n) values ($1) returning n, n * 2 as twice');
const DIVIDE = prepared('select 10 / $1::int as q');
const DEFERRED = prepared('insert into deferred_probes (n, other) values ($1, $2)');

beforeAll(async () => {
  db = openDatabase(await createTestDatabase('batch'), { size: 1, acquireTimeoutMs: 5_000 });
  await db.pool.query(`create table probes (n int primary key)`);
  await db.pool.query(
    `create table deferred_probes (n int primary key, other int references deferred_probes (n) deferrable initially deferred)`,
  );
});
afterAll(async () => {
  await db?.pool.end();
});

const probes = async () => (await db.pool.query<{ n: number }>('select n from probes order by n')).rows.map((r) => r.n);

describe('one exchange is one transaction in one round trip', () => {
  it('a setting made by the first statement is seen by the later ones and gone after the exchange', async () => {
    const [set, read] = await exchange(db.pool, [
      { text: SET, values: ['set-in-batch'] },
      { text: READ, values: [] },
    ]);
    expect(set).toMatchObject({ ok: true, result: { rows: [{ v: 'set-in-batch' }], rowCount: 1 } });
    expect(read).toMatchObject({ ok: true, result: { rows: [{ v: 'set-in-batch' }] } });
    const [after] = await exchange(db.pool, [{ text: READ, values: [] }]);
    expect(after).toMatchObject({ ok: true, result: { rows: [{ v: '' }] } });
  });

  it('a failed statement undoes the earlier ones, the later ones are skipped as in an aborted transaction, and the connection goes on', async () => {
    const answers = await exchange(db.pool, [
      { text: INSERT, values: [1] },
      { text: DIVIDE, values: [0] },
      { text: INSERT, values: [2] },
    ]);
    expect(answers[0]).toMatchObject({ ok: true, result: { command: 'INSERT', rowCount: 1 } });
    expect(answers[1]).toMatchObject({ ok: false, error: { code: '22012' } });
    expect(answers[2]).toMatchObject({ ok: false, error: { code: '25P02' } });
    expect(await probes()).toEqual([]);
    const [kept] = await exchange(db.pool, [{ text: INSERT, values: [3] }]);
    expect(kept!.ok).toBe(true);
    expect(await probes()).toEqual([3]);
  });

  it('a statement that failed on its first run (its Parse may have succeeded) runs again on the same connection', async () => {
    const [failed] = await exchange(db.pool, [{ text: prepared('select 100 / $1::int as q'), values: [0] }]);
    expect(failed).toMatchObject({ ok: false, error: { code: '22012' } });
    const [again] = await exchange(db.pool, [{ text: prepared('select 100 / $1::int as q'), values: [4] }]);
    expect(again).toMatchObject({ ok: true, result: { rows: [{ q: 25 }] } });
  });

  it('a statement skipped on its first run (never parsed) is parsed when it next runs', async () => {
    const skippedText = prepared('select $1::int + 1 as next');
    const answers = await exchange(db.pool, [
      { text: DIVIDE, values: [0] },
      { text: skippedText, values: [1] },
    ]);
    expect(answers.map((a) => a.ok)).toEqual([false, false]);
    const [ran] = await exchange(db.pool, [{ text: skippedText, values: [41] }]);
    expect(ran).toMatchObject({ ok: true, result: { rows: [{ next: 42 }] } });
  });

  it('rows keep their column names and types when the row shape is no longer asked for, and statements without rows keep answering', async () => {
    for (const n of [10, 11, 12]) {
      const [inserted, plain, divided] = await exchange(db.pool, [
        { text: INSERT_RETURNING, values: [n] },
        { text: INSERT, values: [n + 100] },
        { text: DIVIDE, values: [5] },
      ]);
      expect(inserted).toMatchObject({ ok: true, result: { rows: [{ n, twice: n * 2 }] } });
      expect(plain).toMatchObject({ ok: true, result: { command: 'INSERT', rowCount: 1, rows: [] } });
      expect(divided).toMatchObject({ ok: true, result: { rows: [{ q: 2 }] } });
    }
  });

  it('a statement not registered as prepared runs unnamed', async () => {
    const [answer] = await exchange(db.pool, [{ text: 'select $1::text as echo', values: ['plain'] }]);
    expect(answer).toMatchObject({ ok: true, result: { rows: [{ echo: 'plain' }] } });
  });

  it('a commit refused by a deferred constraint is thrown and keeps nothing', async () => {
    await expect(
      exchange(db.pool, [
        { text: INSERT, values: [50] },
        { text: DEFERRED, values: [1, 999] },
      ]),
    ).rejects.toMatchObject({ code: '23503' });
    expect(await probes()).not.toContain(50);
    const [ok] = await exchange(db.pool, [{ text: DEFERRED, values: [2, 2] }]);
    expect(ok!.ok).toBe(true);
  });

  it('a connection lost in the middle of an exchange is thrown, the pool drops it, and the next exchange runs on a new one', async () => {
    const [{ pid }] = (await db.pool.query<{ pid: number }>('select pg_backend_pid() as pid')).rows as [
      { pid: number },
    ];
    const killer = new pg.Client({ connectionString: db.url });
    await killer.connect();
    try {
      // Settled into a value at once, so its rejection is handled whenever it comes.
      const lost = exchange(db.pool, [
        { text: INSERT, values: [70] },
        { text: 'select pg_sleep(5)', values: [] },
      ]).then(
        () => undefined,
        (error: Error) => error,
      );
      // Once the exchange is running, end its backend from outside.
      for (let i = 0; i < 50; i++) {
        const { rows } = await killer.query<{ state: string }>('select state from pg_stat_activity where pid = $1', [
          pid,
        ]);
        if (rows[0]?.state === 'active') break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await killer.query('select pg_terminate_backend($1)', [pid]);
      expect(await lost).toMatchObject({ code: '57P01', severity: 'FATAL' });
    } finally {
      await killer.end();
    }
    expect(await probes()).not.toContain(70);
    const [after] = await exchange(db.pool, [{ text: DIVIDE, values: [5] }]);
    expect(after).toMatchObject({ ok: true, result: { rows: [{ q: 2 }] } });
    expect((await db.pool.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid).not.toBe(pid);
  });

  it('a value pg cannot serialise fails the exchange before anything is sent, and the connection is kept', async () => {
    const [{ pid }] = (await db.pool.query<{ pid: number }>('select pg_backend_pid() as pid')).rows as [
      { pid: number },
    ];
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    await expect(exchange(db.pool, [{ text: INSERT, values: [circular] }])).rejects.toThrow(/circular/);
    expect((await db.pool.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid).toBe(pid);
    const [ok] = await exchange(db.pool, [{ text: DIVIDE, values: [2] }]);
    expect(ok).toMatchObject({ ok: true, result: { rows: [{ q: 5 }] } });
  });
});

/**
 * The library behaviour the request path relies on, pinned so that an upgrade which changes it
 * fails here and not in production: pg's pipeline mode (documented: a client in `pipeline: true`
 * writes each query as it is issued, and answers them in order), PostgreSQL's COMMIT tag after a
 * failure, and the read-only switch the one-exchange guard throws.
 */
describe('what the transport relies on', () => {
  const wireOf = async (fn: (client: pg.PoolClient) => Promise<unknown>): Promise<('write' | 'read')[]> => {
    const client = await db.pool.connect();
    const wire: ('write' | 'read')[] = [];
    const socket = (client as unknown as GatheringClient).socket;
    const write = socket.write;
    const onData = () => void wire.push('read');
    socket.write = function (this: unknown, ...args: unknown[]) {
      wire.push('write');
      return (write as (...a: unknown[]) => boolean).apply(socket, args);
    } as typeof socket.write;
    // Before pg's own listener, so a read is recorded before whatever pg writes in answer to it.
    socket.prependListener('data', onData);
    try {
      await fn(client);
    } finally {
      socket.write = write;
      socket.off('data', onData);
      client.release();
    }
    return wire;
  };
  const roundTrips = (wire: ('write' | 'read')[]) =>
    wire.filter((w, i) => w === 'write' && wire[i - 1] !== 'write').length;

  it('pg in pipeline mode sends every query of a group before the first answer arrives: one round trip', async () => {
    const wire = await wireOf((client) =>
      Promise.all(
        issue(client, [
          BEGIN,
          { text: SET, values: ['x'], name: statementName(SET) },
          { text: READ, values: [], name: statementName(READ) },
          { text: 'select pg_sleep(0.05)', values: [] },
          COMMIT,
        ]),
      ),
    );
    expect(wire[0]).toBe('write');
    expect(roundTrips(wire)).toBe(1);
  });

  it('an exchange is one round trip on the wire, the first time its statements are prepared and after', async () => {
    for (let i = 0; i < 2; i++) {
      const wire = await wireOf((client) =>
        new PipelinedConnection(client).transaction([
          { text: SET, values: ['y'], name: statementName(SET) },
          { text: INSERT_RETURNING, values: [200 + i], name: statementName(INSERT_RETURNING) },
        ]),
      );
      expect(roundTrips(wire)).toBe(1);
    }
  });

  it('a transaction through kysely sends its BEGIN with its first statement, and its deferred statement with the COMMIT', async () => {
    const later = deferred('insert into probes (n) values ($1)  ');
    let wire: ('write' | 'read')[] = [];
    const client = await db.pool.connect();
    const socket = (client as unknown as GatheringClient).socket;
    client.release();
    const write = socket.write;
    socket.write = function (this: unknown, ...args: unknown[]) {
      wire.push('write');
      return (write as (...a: unknown[]) => boolean).apply(socket, args);
    } as typeof socket.write;
    const onData = () => void wire.push('read');
    socket.prependListener('data', onData);
    try {
      await db.kysely.transaction().execute(async (trx) => {
        await trx.executeQuery(CompiledQuery.raw(INSERT, [300]));
        await trx.executeQuery(CompiledQuery.raw(later, [301]));
      });
    } finally {
      socket.write = write;
      socket.off('data', onData);
    }
    // BEGIN + the insert, then the deferred insert + COMMIT: two round trips, not four.
    expect(roundTrips(wire)).toBe(2);
    expect(await probes()).toEqual(expect.arrayContaining([300, 301]));
    wire = [];
  });

  it('PostgreSQL answers the COMMIT of a failed transaction with a ROLLBACK tag, which kysely is told as an aborted transaction', async () => {
    const client = await db.pool.connect();
    try {
      const answers = await settle(issue(client, [BEGIN, { text: DIVIDE, values: [0] }, COMMIT]));
      expect(answers[1]).toMatchObject({ ok: false, error: { code: '22012' } });
      expect(answers[2]).toMatchObject({ ok: true, result: { command: 'ROLLBACK' } });
    } finally {
      client.release();
    }
  });

  it('a transaction turned read-only mid-way refuses every write after it, and commits nothing (the one-exchange guard)', async () => {
    const answers = await exchange(db.pool, [
      { text: `select set_config('transaction_read_only', 'on', true)`, values: [] },
      { text: INSERT, values: [400] },
    ]);
    expect(answers[1]).toMatchObject({ ok: false, error: { code: '25006' } });
    expect(await probes()).not.toContain(400);
  });
});
