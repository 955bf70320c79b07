import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Type from 'typebox';
import { CompiledQuery } from 'kysely';
import { startTestApp, createCustomer, signInAs, type TestApp } from '../helpers/app.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { allModules } from '../../modules/index.ts';
import { defineCommand, defineEntity, defineModule, entity } from '../../framework/entity/define.ts';
import { DateTime } from '../../framework/entity/date-time.ts';
import { problem } from '../../framework/errors.ts';
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
        return {
          note: `prepared saw ${(prepared as { widgets: number }).widgets}`,
          approved: true,
          approvedAt: ctx.now,
        };
      },
    }),
  },
});

const prepModule = defineModule({ name: 'preptest', events: ['preptest.stamped'], entities: [entity(prepared)] });

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
