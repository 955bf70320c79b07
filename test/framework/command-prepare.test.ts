import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Type from 'typebox';
import { CompiledQuery } from 'kysely';
import { startTestApp, createCustomer, signInAs, type TestApp } from '../helpers/app.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { allModules } from '../../modules/index.ts';
import { defineCommand, defineEntity, defineModule, entity } from '../../framework/entity/define.ts';
import { DateTime } from '../../framework/entity/date-time.ts';
import { problem } from '../../framework/errors.ts';
import { insideTransactionBody } from '../../framework/db/pool.ts';
import { createHash } from 'node:crypto';
import type { TenantRef } from '../../framework/context/tenant.ts';

/**
 * A command's prepare: work before the command's transaction with no transaction open (a payment),
 * opening transactions of its own, whose result reaches run. Shown on the test kit's widgets table
 * through an entity of this test's own.
 */
const fields = {
  name: Type.String({ minLength: 1, maxLength: 100 }),
  size: Type.Integer({ minimum: 0, maximum: 1000 }),
  note: Type.Optional(Type.String({ maxLength: 500 })),
  color: Type.String({ minLength: 1, maxLength: 30 }),
  approved: Type.Boolean(),
  approvedAt: Type.Optional(DateTime()),
};
const command = defineCommand(fields);
const seen: { openTransactions: number; widgets: number; tenant: string; session: boolean }[] = [];
/** What each step before a transaction saw: whether its caller held a transaction, and how many were open. */
const steps: { inTransaction: boolean; openTransactions: number; color: string }[] = [];

const prepared = defineEntity({
  module: 'preptest',
  name: 'item',
  storage: { table: 'widgets' },
  fields,
  commandOwned: { approved: 'stamp', approvedAt: 'stamp' },
  permissions: { read: 'widget:read', write: 'widget:write' },
  commands: {
    stamp: command({
      summary: 'Stamp a widget with what prepare saw',
      body: Type.Object({ refuse: Type.Boolean() }, { additionalProperties: false }),
      publishes: ['preptest.stamped'],
      async prepare(ctx, body) {
        const widgets = await ctx.transaction(async (tx) => {
          tx.publish('preptest.stamped', { step: 'prepare' });
          const { rows } = await tx.db.executeQuery<{ n: number }>(
            CompiledQuery.raw('select count(*)::int as n from widgets'),
          );
          return rows[0]!.n;
        });
        // The pool is refused inside a transaction: reaching it proves none is open here.
        const { rows } = await ctx.services.db.pool.query<{ n: number }>(
          `select count(*)::int as n from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'`,
        );
        seen.push({ openTransactions: rows[0]!.n, widgets, tenant: ctx.tenant.slug, session: ctx.session !== null });
        if (body.refuse) throw problem('INVALID_STATE', 'prepare refused');
        return { widgets };
      },
      async run(ctx, _row, _body, _services, prepared) {
        ctx.publish('preptest.stamped', { step: 'run' });
        // @ts-expect-error: prepare's result is typed (its return), and has no property digest
        void prepared.digest;
        return {
          note: `prepared saw ${(prepared as { widgets: number }).widgets}`,
          approved: true,
          approvedAt: ctx.now,
        };
      },
    }),
  },
});

/** A step before the command's transaction: CPU-bound work whose result run stores. */
const digested = defineEntity({
  module: 'preptest',
  name: 'digested',
  storage: { table: 'widgets' },
  fields,
  commandOwned: { note: 'digest' },
  permissions: { read: 'widget:read', write: 'widget:write' },
  commands: {
    digest: command({
      summary: 'Note a digest of a color made before the transaction',
      body: Type.Object({ color: Type.String({ minLength: 1, maxLength: 30 }) }, { additionalProperties: false }),
      async beforeTransaction(body, services) {
        // The pool is refused inside a transaction: reaching it proves none of this request's is open.
        const { rows } = await services.db.pool.query<{ n: number }>(
          `select count(*)::int as n from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'`,
        );
        steps.push({ inTransaction: insideTransactionBody(), openTransactions: rows[0]!.n, color: body.color });
        if (body.color === 'none')
          throw problem('VALIDATION_FAILED', 'no such color', {
            errors: [{ pointer: '/body/color', message: 'no such color' }],
          });
        return { digest: createHash('sha256').update(body.color).digest('hex').slice(0, 12) };
      },
      async run(_ctx, _row, body, _services, prepared) {
        return { note: `${body.color}:${prepared.digest}` };
      },
    }),
  },
});

const prepModule = defineModule({
  name: 'preptest',
  events: ['preptest.stamped'],
  entities: [entity(prepared), entity(digested)],
});

let app: TestApp;
let acme: TenantRef;
let cookie: string;

beforeAll(async () => {
  app = await startTestApp({ modules: [...allModules, testkitModule, prepModule] });
  acme = await createCustomer(app, 'prepare-acme');
  cookie = (await signInAs(app, acme, ['widget:read', 'widget:write'])).cookie;
});
afterAll(async () => {
  await app?.close();
});
beforeEach(() => {
  seen.length = 0;
  steps.length = 0;
});

const http = () => app.http('prepare-acme.localhost');
const stored = async (id: string) =>
  (await app.services.db.pool.query(`select * from widgets where id = $1`, [id])).rows[0];
const stamped = async () =>
  (
    await app.services.db.pool.query(
      `select payload from outbox where tenant_id = $1 and name = 'preptest.stamped' order by id`,
      [acme.id],
    )
  ).rows.map((r) => r.payload);

describe('a command with prepare', () => {
  it('prepares with no transaction open, in transactions of its own acting for the caller, and hands its result to run', async () => {
    const created = await http()
      .post('/api/v1/preptest/items')
      .set('Cookie', cookie)
      .send({ name: 'one', size: 1, color: 'red' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const res = await http()
      .post(`/api/v1/preptest/items/${created.body.id}/stamp`)
      .set('Cookie', cookie)
      .send({ refuse: false });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ approved: true, note: 'prepared saw 1' });
    expect(seen).toEqual([{ openTransactions: 0, widgets: 1, tenant: 'prepare-acme', session: true }]);
    // Both transactions committed their events, each held to the command's publish list.
    expect(await stamped()).toEqual([{ step: 'prepare' }, { step: 'run' }]);
  });

  it('a problem prepare throws is the answer: run does not run and the row is unchanged', async () => {
    const created = await http()
      .post('/api/v1/preptest/items')
      .set('Cookie', cookie)
      .send({ name: 'two', size: 2, color: 'blue' });
    const before = await stored(created.body.id);
    const events = (await stamped()).length;
    const res = await http()
      .post(`/api/v1/preptest/items/${created.body.id}/stamp`)
      .set('Cookie', cookie)
      .send({ refuse: true });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('INVALID_STATE');
    expect(await stored(created.body.id)).toEqual(before);
    // prepare's own transaction had committed before it refused.
    expect((await stamped()).length).toBe(events + 1);
  });

  it('is guarded like any command: 401 without a session, 403 without the permission, prepare never called', async () => {
    const created = await http()
      .post('/api/v1/preptest/items')
      .set('Cookie', cookie)
      .send({ name: 'three', size: 3, color: 'green' });
    expect((await http().post(`/api/v1/preptest/items/${created.body.id}/stamp`).send({ refuse: false })).status).toBe(
      401,
    );
    const reader = (await signInAs(app, acme, ['widget:read'])).cookie;
    expect(
      (
        await http()
          .post(`/api/v1/preptest/items/${created.body.id}/stamp`)
          .set('Cookie', reader)
          .send({ refuse: false })
      ).status,
    ).toBe(403);
    expect(seen).toEqual([]);
  });
});

const digestOf = (color: string) => createHash('sha256').update(color).digest('hex').slice(0, 12);
const newWidget = async (name: string) =>
  (await http().post('/api/v1/preptest/items').set('Cookie', cookie).send({ name, size: 1, color: 'red' })).body
    .id as string;
const digestPath = (id: string) => `/api/v1/preptest/digesteds/${id}/digest`;

describe('a command with a step before its transaction (beforeTransaction)', () => {
  it('alone: the step runs with no transaction open and its result reaches run', async () => {
    const id = await newWidget('d1');
    const res = await http().post(digestPath(id)).set('Cookie', cookie).send({ color: 'teal' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.note).toBe(`teal:${digestOf('teal')}`);
    expect(steps).toEqual([{ inTransaction: false, openTransactions: 0, color: 'teal' }]);
  });

  it('in a batch called directly: every request prepared before the batch’s transaction opens', async () => {
    const [a, b] = [await newWidget('d2'), await newWidget('d3')];
    const res = await http()
      .post('/api/v1/batch')
      .set('Cookie', cookie)
      .send({
        requests: [
          { method: 'POST', path: digestPath(a), body: { color: 'plum' } },
          { method: 'PATCH', path: `/api/v1/preptest/items/${b}`, body: { size: 7 } },
          { method: 'POST', path: digestPath(b), body: { color: 'sand' } },
        ],
      });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.results.map((r: { body: { note?: string } }) => r.body.note ?? null)).toEqual([
      `plum:${digestOf('plum')}`,
      null,
      `sand:${digestOf('sand')}`,
    ]);
    expect(steps).toEqual([
      { inTransaction: false, openTransactions: 0, color: 'plum' },
      { inTransaction: false, openTransactions: 0, color: 'sand' },
    ]);
  });

  it('in a batch: a refusal of a step names its index and nothing is applied', async () => {
    const a = await newWidget('d4');
    const before = await stored(a);
    const res = await http()
      .post('/api/v1/batch')
      .set('Cookie', cookie)
      .send({
        requests: [
          { method: 'POST', path: digestPath(a), body: { color: 'plum' } },
          { method: 'POST', path: digestPath(a), body: { color: 'none' } },
        ],
      });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({
      code: 'VALIDATION_FAILED',
      index: 1,
      errors: [{ pointer: '/body/requests/1/body/color' }],
    });
    expect(await stored(a)).toEqual(before);
  });

  it('a caller without the permission prepares nothing, alone or in a batch', async () => {
    const a = await newWidget('d5');
    const reader = (await signInAs(app, acme, ['widget:read'])).cookie;
    expect((await http().post(digestPath(a)).set('Cookie', reader).send({ color: 'teal' })).status).toBe(403);
    const res = await http()
      .post('/api/v1/batch')
      .set('Cookie', reader)
      .send({ requests: [{ method: 'POST', path: digestPath(a), body: { color: 'teal' } }] });
    expect(res.status).toBe(403);
    expect(res.body.index).toBe(0);
    expect(steps).toEqual([]);
  });

  it('a retry with the same Idempotency-Key is replayed without running the step again', async () => {
    const a = await newWidget('d6');
    const send = () =>
      http().post(digestPath(a)).set('Cookie', cookie).set('Idempotency-Key', `digest-${a}`).send({ color: 'rose' });
    const first = await send();
    const again = await send();
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(again.body).toEqual(first.body);
    expect(steps).toHaveLength(1);
  });

  it('a command that prepares with effects of its own is still refused in a batch', async () => {
    const a = await newWidget('d7');
    const res = await http()
      .post('/api/v1/batch')
      .set('Cookie', cookie)
      .send({ requests: [{ method: 'POST', path: `/api/v1/preptest/items/${a}/stamp`, body: { refuse: false } }] });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('BATCH_REQUEST_UNSUPPORTED');
    expect(seen).toEqual([]);
  });
});

describe('a command declaring both prepare and beforeTransaction', () => {
  it('stops the boot, naming the command', async () => {
    const both = defineEntity({
      module: 'preptwice',
      name: 'item',
      storage: { table: 'widgets' },
      fields,
      commandOwned: { note: 'twice' },
      permissions: { read: 'widget:read', write: 'widget:write' },
      commands: {
        twice: command({
          summary: 'Declares both steps',
          body: Type.Object({}, { additionalProperties: false }),
          async prepare() {
            return {};
          },
          async beforeTransaction() {
            return {};
          },
          async run() {
            return { note: 'never' };
          },
        }),
      },
    });
    const twiceModule = defineModule({ name: 'preptwice', entities: [entity(both)] });
    await expect(startTestApp({ modules: [...allModules, testkitModule, twiceModule] })).rejects.toThrow(
      /preptwice\.item's command twice declares both prepare and beforeTransaction/,
    );
  });
});
