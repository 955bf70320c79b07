import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Type from 'typebox';
import { sql } from 'kysely';
import { startTestApp, createCustomer, signInAs, OPERATOR_HOST, type TestApp } from '../helpers/app.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { allModules } from '../../modules/index.ts';
import { defineEntity, defineModule, entity } from '../../framework/entity/define.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

/** Every hook call of the probe, in order. */
const calls: string[] = [];

/**
 * A probe over the test kit's memos table whose hooks record the order they run in. Its
 * afterWrite stores `long` (a read-only field) and, for the text "invalid", returns a value the
 * field schema refuses.
 */
const note = defineEntity({
  module: 'lifecycleprobe',
  name: 'note',
  storage: { table: 'memos', deleteMode: 'hard' },
  fields: {
    ownerId: Type.String({ format: 'uuid' }),
    text: Type.String({ minLength: 1 }),
    pinned: Type.Boolean(),
    long: Type.Boolean(),
  },
  commandOwned: { pinned: 'pin' },
  readOnly: ['long'],
  computed: { shout: Type.String() },
  permissions: { read: 'widget:read', write: 'widget:write' },
  commands: {
    pin: {
      summary: 'Pin',
      async run(_ctx, row) {
        calls.push('run:pin');
        return row.pinned ? undefined : { pinned: true };
      },
    },
  },
  hooks: {
    async beforeWrite(_ctx, { op }) {
      calls.push(`beforeWrite:${op}`);
    },
    async beforeDelete() {
      calls.push('beforeDelete');
    },
    async afterWrite(_ctx, input) {
      calls.push(input.op === 'command' ? `afterWrite:command:${input.command}` : `afterWrite:${input.op}`);
      if (input.op === 'delete') return;
      if (input.row.text === 'invalid') return { long: 'yes' as unknown as boolean };
      const long = input.row.text.length > 10;
      if (long !== input.row.long) return { long };
    },
    afterRead(_ctx, row) {
      calls.push('afterRead');
      return { ...row, shout: row.text.toUpperCase() };
    },
  },
});
const probe = defineModule({ name: 'lifecycleprobe', entities: [entity(note)] });

const NOTES = '/api/v1/lifecycleprobe/notes';
const MEMOS = '/api/v1/testkit/memos';
let app: TestApp;
let tenant: TenantRef;
let host: string;
let cookie: string;
let userId: string;

beforeAll(async () => {
  app = await startTestApp({ modules: [...allModules, testkitModule, probe] });
  tenant = await createCustomer(app, 'lifecycle');
  host = `${tenant.slug}.localhost`;
  const user = await signInAs(app, tenant, ['widget:read', 'widget:write']);
  cookie = user.cookie;
  userId = user.userId;
});
afterAll(async () => {
  await app?.close();
});

const http = () => app.http(host);
const eventsOf = async (id: string) =>
  (
    await app.services.db.pool.query<{ name: string; payload: { changed?: string[] } }>(
      `select name, payload from outbox where payload->>'id' = $1 order by id`,
      [id],
    )
  ).rows;

describe('lifecycle hooks, in their documented order', () => {
  it('create: beforeWrite, the insert, afterWrite, then afterRead shapes the answer', async () => {
    calls.length = 0;
    const res = await http().post(NOTES).set('Cookie', cookie).send({ ownerId: userId, text: 'short' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(calls).toEqual(['beforeWrite:create', 'afterWrite:create', 'afterRead']);
    expect(res.body.shout).toBe('SHORT');
  });

  it('PATCH: beforeWrite, the update, afterWrite, afterRead; a command: run, afterWrite naming the command, afterRead; DELETE: beforeDelete, then afterWrite', async () => {
    const id = (await http().post(NOTES).set('Cookie', cookie).send({ ownerId: userId, text: 'tiny' })).body.id;
    calls.length = 0;
    await http().patch(`${NOTES}/${id}`).set('Cookie', cookie).send({ text: 'tinier' });
    expect(calls).toEqual(['beforeWrite:update', 'afterWrite:update', 'afterRead']);
    calls.length = 0;
    await http().post(`${NOTES}/${id}/pin`).set('Cookie', cookie);
    expect(calls).toEqual(['run:pin', 'afterWrite:command:pin', 'afterRead']);
    calls.length = 0;
    expect((await http().delete(`${NOTES}/${id}`).set('Cookie', cookie)).status).toBe(204);
    expect(calls).toEqual(['beforeDelete', 'afterWrite:delete']);
  });

  it("afterWrite's returned changes are stored through the framework's write, publishing the updated event, without calling afterWrite again", async () => {
    calls.length = 0;
    const res = await http().post(NOTES).set('Cookie', cookie).send({ ownerId: userId, text: 'a rather long note' });
    expect(res.body.long).toBe(true);
    expect(calls.filter((c) => c.startsWith('afterWrite'))).toEqual(['afterWrite:create']);
    const { rows } = await app.services.db.pool.query(`select long from memos where id = $1`, [res.body.id]);
    expect(rows[0].long).toBe(true);
    expect(await eventsOf(res.body.id)).toEqual([
      { name: 'lifecycleprobe.note.created', payload: { id: res.body.id } },
      { name: 'lifecycleprobe.note.updated', payload: { id: res.body.id, changed: ['long'] } },
    ]);
    // A PATCH that shortens it: the hook clears the flag in the same way.
    const patched = await http().patch(`${NOTES}/${res.body.id}`).set('Cookie', cookie).send({ text: 'short' });
    expect(patched.body).toMatchObject({ text: 'short', long: false, shout: 'SHORT' });
  });

  it("validates afterWrite's changes like a command's: a value the field refuses answers 422 and the whole write rolls back", async () => {
    const before = (await app.services.db.pool.query(`select count(*)::int as n from memos`)).rows[0].n;
    const res = await http().post(NOTES).set('Cookie', cookie).send({ ownerId: userId, text: 'invalid' });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ pointer: '/long' }] });
    expect((await app.services.db.pool.query(`select count(*)::int as n from memos`)).rows[0].n).toBe(before);
  });

  it("afterRead shapes every route's rows: list items, read, create, update and commands", async () => {
    const text = 'a memo long enough for an excerpt';
    const excerpt = `${text.slice(0, 20)}…`;
    const created = await http().post(MEMOS).set('Cookie', cookie).send({ ownerId: userId, text });
    expect(created.body.excerpt).toBe(excerpt);
    const id = created.body.id;
    expect((await http().get(`${MEMOS}/${id}`).set('Cookie', cookie)).body.excerpt).toBe(excerpt);
    const list = await http().get(MEMOS).set('Cookie', cookie);
    expect(list.body.items.find((m: { id: string }) => m.id === id).excerpt).toBe(excerpt);
    for (const m of list.body.items) expect(typeof m.excerpt).toBe('string');
    expect((await http().patch(`${MEMOS}/${id}`).set('Cookie', cookie).send({ text: 'brief' })).body.excerpt).toBe(
      'brief',
    );
    expect((await http().post(`${MEMOS}/${id}/pin`).set('Cookie', cookie)).body).toMatchObject({
      pinned: true,
      excerpt: 'brief',
    });
  });
});

describe('hard delete', () => {
  it('removes the row (the table has no deleted_at) and still publishes the deleted event', async () => {
    const id = (await http().post(MEMOS).set('Cookie', cookie).send({ ownerId: userId, text: 'to remove' })).body.id;
    expect((await http().delete(`${MEMOS}/${id}`).set('Cookie', cookie)).status).toBe(204);
    expect((await app.services.db.pool.query(`select 1 from memos where id = $1`, [id])).rows).toEqual([]);
    expect((await eventsOf(id)).map((e) => e.name)).toEqual(['testkit.memo.created', 'testkit.memo.deleted']);
    expect((await http().delete(`${MEMOS}/${id}`).set('Cookie', cookie)).status).toBe(404);
    const { rows } = await app.services.db.pool.query(
      `select 1 from information_schema.columns where table_name = 'memos' and column_name = 'deleted_at'`,
    );
    expect(rows).toEqual([]);
  });
});

describe('beforeDelete may refuse, asking across tenants through a security-definer function', () => {
  it('refuses to delete a global gadget a setting of another tenant still chooses (409, nothing deleted or published), and deletes it once none does', async () => {
    const operator = await signInAs(app, app.operator, ['widget:read', 'widget:operate']);
    const gadget = await app
      .http(OPERATOR_HOST)
      .post('/api/v1/testkit/gadgets')
      .set('Cookie', operator.cookie)
      .send({ code: 'g-in-use', name: 'Used', price: 100 });
    expect(gadget.status, JSON.stringify(gadget.body)).toBe(201);
    const id = gadget.body.id;
    // A customer chooses it in its own setting.
    expect((await http().post('/api/v1/testkit/setting/activate').set('Cookie', cookie).send({})).status).toBe(200);
    expect((await http().patch('/api/v1/testkit/setting').set('Cookie', cookie).send({ gadgetId: id })).status).toBe(
      200,
    );

    // The operator's own transaction cannot see that setting; the function can.
    const seen = await app.services.transactions.run(app.operator, async (ctx) => {
      const direct = await sql<{ n: number }>`select count(*)::int as n from settings where gadget_id = ${id}`.execute(
        ctx.db,
      );
      const viaFunction = await sql<{ used: boolean }>`select testkit_gadget_in_use(${id}) as used`.execute(ctx.db);
      return { direct: direct.rows[0]!.n, used: viaFunction.rows[0]!.used };
    });
    expect(seen).toEqual({ direct: 0, used: true });

    const refused = await app
      .http(OPERATOR_HOST)
      .delete(`/api/v1/testkit/gadgets/${id}`)
      .set('Cookie', operator.cookie);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({
      code: 'INVALID_STATE',
      detail: "gadget g-in-use is still chosen by a tenant's setting",
    });
    expect(
      (await app.services.db.pool.query(`select deleted_at from gadgets where id = $1`, [id])).rows[0].deleted_at,
    ).toBeNull();
    expect((await eventsOf(id)).map((e) => e.name)).toEqual(['testkit.gadget.created']);

    expect(
      (
        await http()
          .patch('/api/v1/testkit/setting')
          .set('Cookie', cookie)
          .send({ gadgetId: '00000000-0000-4000-8000-00000000000f' })
      ).status,
    ).toBe(200);
    expect(
      (await app.http(OPERATOR_HOST).delete(`/api/v1/testkit/gadgets/${id}`).set('Cookie', operator.cookie)).status,
    ).toBe(204);
    expect((await eventsOf(id)).map((e) => e.name)).toEqual(['testkit.gadget.created', 'testkit.gadget.deleted']);
  });

  it('runs the function as tenantry_cross_tenant, which cannot log in, bypasses no row-level security and may only read', async () => {
    const { rows } = await app.services.db.pool.query(
      `select r.rolcanlogin, r.rolbypassrls, r.rolsuper, p.prosecdef, pg_get_userbyid(p.proowner) as owner,
              has_table_privilege('tenantry_cross_tenant', 'settings', 'insert, update, delete') as writes,
              (select array_agg(policyname::text order by policyname) from pg_policies where tablename = 'settings') as policies
         from pg_roles r, pg_proc p where r.rolname = 'tenantry_cross_tenant' and p.proname = 'testkit_gadget_in_use'`,
    );
    expect(rows).toEqual([
      {
        rolcanlogin: false,
        rolbypassrls: false,
        rolsuper: false,
        prosecdef: true,
        owner: 'tenantry_cross_tenant',
        writes: false,
        policies: ['cross_tenant_read', 'tenant_isolation'],
      },
    ]);
  });
});
