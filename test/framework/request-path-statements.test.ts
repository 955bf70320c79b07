import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp, createCustomer, signInAs, type TestApp, type SignedIn } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import { hashSecret } from '../../framework/access/session-cookie.ts';
import type { GatheringClient } from '../../framework/db/gathering-client.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

// One connection in the pool: the statements after a transaction run on the session it used, so a
// transaction left open or a statement not prepared there would show.
let app: TestApp;
let acme: TenantRef;
let reader: SignedIn;

interface Sent {
  text: string;
  values: unknown[];
  /** Answers this checkout had received when the statement was issued: statements issued with the same count travel together. */
  answersBefore: number;
}
interface Checkout {
  sent: Sent[];
  answers: number;
  /** What crossed the client's socket, in order: a write to PostgreSQL, or data read from it. */
  wire: ('write' | 'read')[];
}

/**
 * What each pool checkout sent, observed on the real driver: every statement with the number of
 * answers received before it was issued. Statements issued before any answer came back left in
 * one write and cost one round trip; each later count is another exchange. And, on the socket the
 * framework hands pg (GatheringClient), what crossed the wire: writes and reads in order.
 */
let checkouts: Checkout[] = [];
function watchCheckouts(pool: pg.Pool): void {
  const current = new WeakMap<pg.PoolClient, Checkout>();
  const watched = new WeakSet<pg.PoolClient>();
  pool.on('acquire', (client) => {
    const checkout: Checkout = { sent: [], answers: 0, wire: [] };
    checkouts.push(checkout);
    current.set(client, checkout);
    if (watched.has(client)) return;
    watched.add(client);
    const socket = (client as unknown as GatheringClient).socket;
    const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
    socket.write = ((...args: unknown[]) => {
      current.get(client)!.wire.push('write');
      return write(...args);
    }) as typeof socket.write;
    // Before pg's own listener, so a read is recorded before whatever pg writes in answer to it.
    socket.prependListener('data', () => void current.get(client)!.wire.push('read'));
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const checkout = current.get(client)!;
      const config = args[0] as string | { text: string; values?: unknown[] };
      const text = typeof config === 'string' ? config : config.text;
      const values = typeof config === 'string' ? ((args[1] as unknown[] | undefined) ?? []) : (config.values ?? []);
      checkout.sent.push({ text, values, answersBefore: checkout.answers });
      const result = query(...args);
      const answered = () => void (checkout.answers += 1);
      if (result instanceof Promise) result.then(answered, answered);
      return result;
    };
  });
}

/** Round trips on the wire: each run of writes that follows a read (or opens the checkout) is one. */
const roundTrips = (checkout: Checkout): number =>
  checkout.wire.filter((w, i) => w === 'write' && checkout.wire[i - 1] !== 'write').length;
/** The statements between the transaction's BEGIN and COMMIT, which the exchange adds itself. */
const inner = (checkout: Checkout): Sent[] => {
  expect(checkout.sent[0]!.text).toBe('begin');
  expect(checkout.sent.at(-1)!.text).toBe('commit');
  return checkout.sent.slice(1, -1);
};
const exchanges = (checkout: Checkout): number => new Set(checkout.sent.map((s) => s.answersBefore)).size;
const listCheckout = (): Checkout => {
  const found = checkouts.filter((c) => c.sent.some((s) => s.text.includes('from "widgets"')));
  expect(found).toHaveLength(1);
  return found[0]!;
};

beforeAll(async () => {
  app = await startTestApp({ config: testConfig({ database: { pool_size: 1 } }) });
  acme = await createCustomer(app, 'acme');
  reader = await signInAs(app, acme, ['widget:read', 'widget:write']);
  watchCheckouts(app.services.db.pool);
});
afterAll(async () => {
  await app?.close();
});

const widgets = async () =>
  (
    await app.services.transactions.run(acme, (ctx) => sql<{ name: string }>`select name from widgets`.execute(ctx.db))
  ).rows.map((r) => r.name);

describe('one exchange per read request', () => {
  beforeEach(() => {
    checkouts = [];
  });

  it('a list GET sends the opening statement and the list in one write, one round trip, as one transaction, and reads one answer', async () => {
    const res = await app.http('acme.localhost').get('/api/v1/testkit/widgets?limit=5').set('Cookie', reader.cookie);
    expect(res.status).toBe(200);
    const checkout = listCheckout();
    const statements = inner(checkout);
    expect(statements.map((s) => s.text.trim().split(/\s+/, 1)[0]!.toLowerCase())).toEqual(['select', 'select']);
    expect(statements[0]!.text).toContain('from sessions');
    // The opening statement carries the guard: a caller without the permission leaves it read-only.
    expect(statements[0]!.text).toContain('transaction_read_only');
    expect(exchanges(checkout)).toBe(1);
    expect(roundTrips(checkout)).toBe(1);
  });

  it('a list GET with an invalid session cookie is 401, and its list statement, sent in that exchange, reads no row', async () => {
    const res = await app
      .http('acme.localhost')
      .get('/api/v1/testkit/widgets')
      .set('Cookie', `app_session=${randomBytes(32).toString('base64url')}`);
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('AUTH_REQUIRED');
    const checkout = listCheckout();
    expect(exchanges(checkout)).toBe(1);
    const [opening, list] = inner(checkout);

    // The same statements, run again with EXPLAIN ANALYZE: no plan node that reads widgets ever ran.
    const loopsOnWidgets = async (openingValues: unknown[]): Promise<number[]> => {
      const client = await app.services.db.pool.connect();
      try {
        await client.query('begin');
        await client.query(opening!.text, openingValues);
        const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(
          `explain (analyze, format json) ${list!.text}`,
          list!.values,
        );
        const loops: number[] = [];
        const walk = (node: { 'Relation Name'?: string; 'Actual Loops'?: number; Plans?: unknown[] }) => {
          if (node['Relation Name'] === 'widgets') loops.push(node['Actual Loops']!);
          for (const child of node.Plans ?? []) walk(child as typeof node);
        };
        walk((rows[0]!['QUERY PLAN'] as { Plan: Parameters<typeof walk>[0] }[])[0]!.Plan);
        return loops;
      } finally {
        await client.query('rollback');
        client.release();
      }
    };
    const invalid = await loopsOnWidgets(opening!.values);
    expect(invalid.length).toBeGreaterThan(0);
    expect(invalid.every((n) => n === 0)).toBe(true);
    // The control: with the reader's session, the same statement does read widgets.
    const valid = await loopsOnWidgets([
      opening!.values[0],
      hashSecret(reader.rawSessionId),
      opening!.values[2],
      opening!.values[3],
    ]);
    expect(valid.some((n) => n > 0)).toBe(true);
  });

  it('a session due for its touch is slid forward after the list, in an exchange of its own, and its cookie re-issued', async () => {
    const caller = await signInAs(app, acme, ['widget:read']);
    await app.services.transactions.run(acme, (ctx) =>
      sql`update sessions set last_seen_at = now() - interval '6 minutes', expires_at = now() + interval '1 day' where user_id = ${caller.userId}`.execute(
        ctx.db,
      ),
    );
    checkouts = [];
    const res = await app.http('acme.localhost').get('/api/v1/testkit/widgets').set('Cookie', caller.cookie);
    expect(res.status).toBe(200);
    expect(exchanges(listCheckout())).toBe(1);
    const touch = checkouts.filter((c) => c.sent.some((s) => s.text.includes('update sessions')));
    expect(touch).toHaveLength(1);
    expect(exchanges(touch[0]!)).toBe(1);
    const setCookie = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
    expect(setCookie.join('\n')).toMatch(/Max-Age=(259\d{4})/);
    const { rows } = await app.services.transactions.run(acme, (ctx) =>
      sql<{
        fresh: boolean;
      }>`select last_seen_at > now() - interval '1 minute' as fresh from sessions where user_id = ${caller.userId}`.execute(
        ctx.db,
      ),
    );
    expect(rows).toEqual([{ fresh: true }]);
  });

  it('a read by id is one exchange too: the row, 404 for an unknown id, 401 and 403 before either', async () => {
    const created = await app
      .http('acme.localhost')
      .post('/api/v1/testkit/widgets')
      .set('Cookie', reader.cookie)
      .send({ name: 'read-me', size: 3, color: 'blue' });
    expect(created.status).toBe(201);
    const readCheckout = (): Checkout => {
      const found = checkouts.filter((c) =>
        c.sent.some((s) => s.text.startsWith('select') && s.text.includes('from "widgets" where id = $1')),
      );
      expect(found).toHaveLength(1);
      return found[0]!;
    };
    const read = (id: string, cookie: string) =>
      app.http('acme.localhost').get(`/api/v1/testkit/widgets/${id}`).set('Cookie', cookie);

    checkouts = [];
    const found = await read(created.body.id, reader.cookie);
    expect(found.status).toBe(200);
    expect(found.body.name).toBe('read-me');
    expect(exchanges(readCheckout())).toBe(1);
    expect(inner(readCheckout())).toHaveLength(2);
    expect(roundTrips(readCheckout())).toBe(1);

    checkouts = [];
    const unknown = await read('0190b6a0-0000-7000-8000-000000000000', reader.cookie);
    expect(unknown.status).toBe(404);
    expect(exchanges(readCheckout())).toBe(1);

    checkouts = [];
    const anonymous = await read(created.body.id, `app_session=${randomBytes(32).toString('base64url')}`);
    expect(anonymous.status).toBe(401);
    expect(exchanges(readCheckout())).toBe(1);

    const outsider = await signInAs(app, acme, []);
    checkouts = [];
    const refused = await read(created.body.id, outsider.cookie);
    expect(refused.status).toBe(403);
    expect(exchanges(readCheckout())).toBe(1);
  });

  it('a signed-in caller without the read permission is 403 and the list finds no row for them', async () => {
    const outsider = await signInAs(app, acme, []);
    const res = await app.http('acme.localhost').get('/api/v1/testkit/widgets').set('Cookie', outsider.cookie);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('AUTH_FORBIDDEN');
    expect(exchanges(listCheckout())).toBe(1);
  });
});

describe('one exchange per write whose values are known in advance', () => {
  beforeEach(() => {
    checkouts = [];
  });

  const insertCheckout = (): Checkout => {
    const found = checkouts.filter((c) => c.sent.some((s) => s.text.includes('insert into "widgets"')));
    expect(found).toHaveLength(1);
    return found[0]!;
  };

  it('a create POST sends the opening statement, the insert with its id made in the process (and its revision, in the same statement) and the outbox insert in one write, one round trip, as one transaction', async () => {
    const res = await app
      .http('acme.localhost')
      .post('/api/v1/testkit/widgets')
      .set('Cookie', reader.cookie)
      .send({ name: 'one-exchange', size: 2, color: 'red' });
    expect(res.status).toBe(201);
    expect(res.body.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(res.headers.location).toBe(`/api/v1/testkit/widgets/${res.body.id}`);
    const checkout = insertCheckout();
    const statements = inner(checkout);
    expect(statements.map((s) => s.text.trim().split(/\s+/, 2).join(' ').toLowerCase())).toEqual([
      "select set_config('app.tenant_id',",
      'with created',
      'insert into',
    ]);
    // The widget keeps history: the create's revision is written by the insert's own statement.
    expect(statements[1]!.text).toContain('insert into "widgets"');
    expect(statements[1]!.text).toContain('insert into revisions');
    expect(statements[2]!.text).toContain('into outbox');
    expect(exchanges(checkout)).toBe(1);
    expect(roundTrips(checkout)).toBe(1);
    // The event names the row and the caller as its actor, as a handler's publish does.
    const { rows } = await app.services.db.pool.query<{ actor_id: string }>(
      `select actor_id from outbox where name = 'testkit.widget.created' and payload->>'id' = $1`,
      [res.body.id],
    );
    expect(rows).toEqual([{ actor_id: reader.userId }]);
    expect(await widgets()).toContain('one-exchange');
  });

  it('a create by a caller without the write permission is 403, and neither the row nor its event is written', async () => {
    const viewer = await signInAs(app, acme, ['widget:read']);
    const res = await app
      .http('acme.localhost')
      .post('/api/v1/testkit/widgets')
      .set('Cookie', viewer.cookie)
      .send({ name: 'not-written', size: 2, color: 'red' });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('AUTH_FORBIDDEN');
    expect(exchanges(insertCheckout())).toBe(1);
    expect(await widgets()).not.toContain('not-written');
    const { rows } = await app.services.db.pool.query(`select 1 from outbox where actor_id = $1`, [viewer.userId]);
    expect(rows).toHaveLength(0);
    const revisions = await app.services.db.pool.query(`select 1 from revisions where actor_id = $1`, [viewer.userId]);
    expect(revisions.rows).toHaveLength(0);
  });

  it('a create refused by a unique index rolls back its event too and answers as before', async () => {
    const first = await app
      .http('acme.localhost')
      .post('/api/v1/testkit/widgets')
      .set('Cookie', reader.cookie)
      .send({ name: 'twice', size: 1, color: 'red' });
    expect(first.status).toBe(201);
    const { rows: before } = await app.services.db.pool.query<{ n: number }>(
      `select count(*)::int as n from outbox where name = 'testkit.widget.created'`,
    );
    const second = await app
      .http('acme.localhost')
      .post('/api/v1/testkit/widgets')
      .set('Cookie', reader.cookie)
      .send({ name: 'twice', size: 1, color: 'red' });
    expect(second.status).toBe(409);
    const { rows: after } = await app.services.db.pool.query<{ n: number }>(
      `select count(*)::int as n from outbox where name = 'testkit.widget.created'`,
    );
    expect(after[0]!.n).toBe(before[0]!.n);
  });
});

describe("the request path's statements", () => {
  it('are prepared once on the connection and reused by every request after', async () => {
    for (let i = 0; i < 3; i++) {
      expect(
        (await app.http('acme.localhost').get('/api/v1/testkit/widgets').set('Cookie', reader.cookie)).status,
      ).toBe(200);
    }
    const { rows } = await app.services.db.pool.query<{ statement: string }>(
      `select statement from pg_prepared_statements where name like 'tenantry\\_%'`,
    );
    const texts = rows.map((r) => r.statement);
    expect(texts.some((t) => t.includes("set_config('app.tenant_id'") && t.includes('from sessions'))).toBe(true);
    expect(texts.some((t) => t.includes('from "widgets"') && /limit 21$/.test(t))).toBe(true);
  });

  it("keep one prepared text per statement under a row-access filter: the caller's values are parameters", async () => {
    const other = await signInAs(app, acme, ['widget:read', 'widget:write']);
    for (const caller of [reader, other]) {
      const created = await app
        .http('acme.localhost')
        .post('/api/v1/testkit/memos')
        .set('Cookie', caller.cookie)
        .send({ ownerId: caller.userId, text: 'mine' });
      expect(created.status).toBe(201);
      const list = await app.http('acme.localhost').get('/api/v1/testkit/memos').set('Cookie', caller.cookie);
      expect(list.body.items.map((m: { id: string }) => m.id)).toEqual([created.body.id]);
      expect(
        (await app.http('acme.localhost').get(`/api/v1/testkit/memos/${created.body.id}`).set('Cookie', caller.cookie))
          .status,
      ).toBe(200);
    }
    const { rows } = await app.services.db.pool.query<{ statement: string }>(
      `select statement from pg_prepared_statements where name like 'tenantry\\_%' and statement like '%from "memos"%'`,
    );
    const texts = rows.map((r) => r.statement);
    // The list: the filter's parameter, the caller, is its only one (the page size is in the text).
    expect(texts.filter((t) => /limit 21$/.test(t))).toEqual([expect.stringContaining('"owner_id" = $1')]);
    expect(texts.filter((t) => t.includes('where id = $1 and "owner_id" = $2'))).toHaveLength(1);
    for (const caller of [reader, other]) expect(texts.join('\n')).not.toContain(caller.userId);
  });

  it('open the transaction with its first statement (BEGIN held back) and still roll back as one', async () => {
    await expect(
      app.services.transactions.run(acme, async (ctx) => {
        await sql`insert into widgets (name, size, color) values ('held-begin', 1, 'red')`.execute(ctx.db);
        throw new Error('the handler fails after its write');
      }),
    ).rejects.toThrow('the handler fails after its write');
    expect(await widgets()).not.toContain('held-begin');
    const res = await app
      .http('acme.localhost')
      .post('/api/v1/testkit/widgets')
      .set('Cookie', reader.cookie)
      .send({ name: 'kept', size: 1, color: 'red' });
    expect(res.status).toBe(201);
    expect(await widgets()).toContain('kept');
  });

  it('write the outbox insert with the COMMIT, and a failing one still fails the transaction with its own error', async () => {
    await expect(
      app.services.transactions.run(
        acme,
        async (ctx) => {
          await sql`insert into widgets (name, size, color) values ('deferred-event', 1, 'red')`.execute(ctx.db);
          ctx.publish('testkit.widget.approved', { id: 'x' });
        },
        // Not a uuid: the outbox insert fails, and only when it reaches the server with the COMMIT.
        { actorId: 'not-a-uuid' },
      ),
    ).rejects.toThrow(/uuid/);
    expect(await widgets()).not.toContain('deferred-event');
    const { rows } = await app.services.db.pool.query(`select 1 from outbox where payload->>'id' = 'x'`);
    expect(rows).toHaveLength(0);
  });

  it('write a PATCH’s revision and its event with the COMMIT: together, after the update, in no exchange of their own', async () => {
    const created = await app
      .http('acme.localhost')
      .post('/api/v1/testkit/widgets')
      .set('Cookie', reader.cookie)
      .send({ name: 'patched-once', size: 1, color: 'red' });
    checkouts = [];
    const res = await app
      .http('acme.localhost')
      .patch(`/api/v1/testkit/widgets/${created.body.id}`)
      .set('Cookie', reader.cookie)
      .send({ size: 2 });
    expect(res.status).toBe(200);
    const checkout = checkouts.find((c) => c.sent.some((s) => s.text.startsWith('update "widgets"')))!;
    const texts = checkout.sent.map((s) => s.text.trim());
    const revision = texts.findIndex((t) => t.startsWith('insert into revisions'));
    const outbox = texts.findIndex((t) => t.startsWith('insert into outbox'));
    // revision, outbox insert, COMMIT: the last three, issued together.
    expect([revision, outbox]).toEqual([texts.length - 3, texts.length - 2]);
    expect(texts.at(-1)).toBe('commit');
    const last = checkout.sent.slice(-3).map((s) => s.answersBefore);
    expect(new Set(last).size).toBe(1);
    // What a PATCH cost before history: the opening, the read and lock, the update, the COMMIT (with the event).
    expect(exchanges(checkout)).toBe(4);
  });

  it('leave the session outside any transaction after one that ran no statement (its BEGIN was never sent)', async () => {
    expect(await app.services.db.kysely.transaction().execute(async () => 'nothing')).toBe('nothing');
    const { rows } = await app.services.db.pool.query<{ fresh: boolean }>(
      'select xact_start = query_start as fresh from pg_stat_activity where pid = pg_backend_pid()',
    );
    expect(rows[0]!.fresh).toBe(true);
  });
});
