import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, createCustomer, signInAs, type TestApp, type SignedIn } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

// One connection in the pool: the statements after a transaction run on the session it used, so a
// transaction left open or a statement not prepared there would show.
let app: TestApp;
let acme: TenantRef;
let reader: SignedIn;

beforeAll(async () => {
  app = await startTestApp({ config: testConfig({ database: { pool_size: 1 } }) });
  acme = await createCustomer(app, 'acme');
  reader = await signInAs(app, acme, ['widget:read', 'widget:write']);
});
afterAll(async () => {
  await app?.close();
});

const widgets = async () => (await app.services.transactions.run(acme, (ctx) => sql<{ name: string }>`select name from widgets`.execute(ctx.db))).rows.map((r) => r.name);

describe('the request path\'s statements', () => {
  it('are prepared once on the connection and reused by every request after', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await app.http('acme.localhost').get('/api/v1/testkit/widgets').set('Cookie', reader.cookie)).status).toBe(200);
    }
    const { rows } = await app.services.db.pool.query<{ statement: string }>(`select statement from pg_prepared_statements where name like 'tenantry\\_%'`);
    const texts = rows.map((r) => r.statement);
    expect(texts.some((t) => t.includes("set_config('app.tenant_id'") && t.includes('from sessions'))).toBe(true);
    expect(texts.some((t) => t.includes('from "widgets"') && /limit \$\d+ offset \$\d+/.test(t))).toBe(true);
  });

  it('keep one prepared text per statement under a row-access filter: the caller\'s values are parameters', async () => {
    const other = await signInAs(app, acme, ['widget:read', 'widget:write']);
    for (const caller of [reader, other]) {
      const created = await app.http('acme.localhost').post('/api/v1/testkit/memos').set('Cookie', caller.cookie).send({ ownerId: caller.userId, text: 'mine' });
      expect(created.status).toBe(201);
      const list = await app.http('acme.localhost').get('/api/v1/testkit/memos').set('Cookie', caller.cookie);
      expect(list.body.items.map((m: { id: string }) => m.id)).toEqual([created.body.id]);
      expect((await app.http('acme.localhost').get(`/api/v1/testkit/memos/${created.body.id}`).set('Cookie', caller.cookie)).status).toBe(200);
    }
    const { rows } = await app.services.db.pool.query<{ statement: string }>(`select statement from pg_prepared_statements where name like 'tenantry\\_%' and statement like '%from "memos"%'`);
    const texts = rows.map((r) => r.statement);
    // The list: the filter's parameters come first, the pager's (limit, offset) after them.
    expect(texts.filter((t) => /limit \$\d+ offset \$\d+/.test(t))).toEqual([expect.stringContaining('"owner_id" = $1')]);
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
    const res = await app.http('acme.localhost').post('/api/v1/testkit/widgets').set('Cookie', reader.cookie).send({ name: 'kept', size: 1, color: 'red' });
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

  it('leave the session outside any transaction after one that ran no statement (its BEGIN was never sent)', async () => {
    expect(await app.services.db.kysely.transaction().execute(async () => 'nothing')).toBe('nothing');
    const { rows } = await app.services.db.pool.query<{ fresh: boolean }>(
      'select xact_start = query_start as fresh from pg_stat_activity where pid = pg_backend_pid()',
    );
    expect(rows[0]!.fresh).toBe(true);
  });
});
