import { beforeAll, describe, expect, it } from 'vitest';
import Type from 'typebox';
import { CompiledQuery } from 'kysely';
import { createCustomer, signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { allModules } from '../../modules/index.ts';
import { defineEntity, defineModule, entity } from '../../framework/entity/define.ts';

/** What the hooks saw: the transaction each ran in, and the operation. */
const calls: { hook: string; op: string; xact: string }[] = [];

/** An entity over the widgets table whose hooks adjust the write and follow it up, in its transaction. */
const sprocket = defineEntity({
  module: 'hookprobe',
  name: 'sprocket',
  storage: { table: 'widgets' },
  fields: {
    name: Type.String({ minLength: 1 }),
    size: Type.Integer({ minimum: 0, maximum: 1000 }),
    note: Type.Optional(Type.String()),
    color: Type.String(),
    approved: Type.Boolean(),
  },
  commandOwned: { approved: 'approve' },
  permissions: { read: 'widget:read', write: 'widget:write' },
  events: { created: 'hookprobe.sprocket_made' },
  hookPublishes: ['hookprobe.sprocket.big'],
  commands: { approve: { summary: 'Approve', run: async () => ({ approved: true }) } },
  hooks: {
    async beforeWrite(ctx, { op, values }) {
      const { rows } = await ctx.db.executeQuery<{ x: string }>(
        CompiledQuery.raw('select pg_current_xact_id()::text as x'),
      );
      calls.push({ hook: 'before', op, xact: rows[0]!.x });
      // A hook may set what the body may not: here the command-owned flag, for small sprockets.
      if (op === 'create') return { note: `made as ${values.name}`, approved: (values.size ?? 0) < 10 };
      return undefined;
    },
    async afterWrite(ctx, { op, row }) {
      const { rows } = await ctx.db.executeQuery<{ x: string }>(
        CompiledQuery.raw('select pg_current_xact_id()::text as x'),
      );
      calls.push({ hook: 'after', op, xact: rows[0]!.x });
      if (op !== 'delete' && row.size > 100) ctx.publish('hookprobe.sprocket.big', { id: row.id });
    },
  },
});

const hookProbe = defineModule({ name: 'hookprobe', events: ['hookprobe.sprocket.big'], entities: [entity(sprocket)] });

const HOST = 'hooks.localhost';
const BASE = '/api/v1/hookprobe/sprockets';
let cookie: string;

const t = useTestApp({ modules: [...allModules, testkitModule, hookProbe] });
beforeAll(async () => {
  const tenant = await createCustomer(t.app, 'hooks', HOST);
  cookie = (await signInAs(t.app, tenant, ['widget:read', 'widget:write'])).cookie;
});

async function eventsOf(id: string): Promise<string[]> {
  const { rows } = await t.app.services.db.pool.query(
    `select name, xmin::text as x from outbox where payload->>'id' = $1 order by id`,
    [id],
  );
  return rows.map((r) => r.name);
}

describe('entity hooks and event names', () => {
  it("run before and after the write, in the request's transaction, and may set command-owned fields", async () => {
    calls.length = 0;
    const res = await t.app.http(HOST).post(BASE).set('Cookie', cookie).send({ name: 'small', size: 3, color: 'red' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ note: 'made as small', approved: true });
    expect(calls.map((c) => `${c.hook}:${c.op}`)).toEqual(['before:create', 'after:create']);
    expect(calls[0]!.xact).toBe(calls[1]!.xact);
    const { rows } = await t.app.services.db.pool.query(
      `select xmin::text as x from outbox where payload->>'id' = $1`,
      [res.body.id],
    );
    expect(rows.map((r) => r.x)).toEqual([calls[0]!.xact]);
  });

  it("publish the overridden and the hook's declared events", async () => {
    const big = await t.app.http(HOST).post(BASE).set('Cookie', cookie).send({ name: 'big', size: 500, color: 'red' });
    expect(big.body.approved).toBe(false);
    expect(await eventsOf(big.body.id)).toEqual(['hookprobe.sprocket_made', 'hookprobe.sprocket.big']);
    calls.length = 0;
    await t.app.http(HOST).patch(`${BASE}/${big.body.id}`).set('Cookie', cookie).send({ size: 7 });
    await t.app.http(HOST).delete(`${BASE}/${big.body.id}`).set('Cookie', cookie);
    expect(calls.map((c) => `${c.hook}:${c.op}`)).toEqual(['before:update', 'after:update', 'after:delete']);
    expect(await eventsOf(big.body.id)).toEqual([
      'hookprobe.sprocket_made',
      'hookprobe.sprocket.big',
      'hookprobe.sprocket.updated',
      'hookprobe.sprocket.deleted',
    ]);
  });

  it("run after a command's write too", async () => {
    const made = await t.app.http(HOST).post(BASE).set('Cookie', cookie).send({ name: 'cmd', size: 50, color: 'red' });
    calls.length = 0;
    const res = await t.app.http(HOST).post(`${BASE}/${made.body.id}/approve`).set('Cookie', cookie);
    expect(res.status).toBe(200);
    expect(res.body.approved).toBe(true);
    expect(calls.map((c) => `${c.hook}:${c.op}`)).toEqual(['after:command']);
  });
});
