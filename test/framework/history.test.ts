import { describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { OPERATOR_HOST, signInAs, type SignedIn } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { JobRunner } from '../../framework/events/jobs.ts';
import type { JobDefinition } from '../../framework/entity/define.ts';
import { uuidv7 } from '../../framework/db/uuidv7.ts';

// History over the test kit's entities: the framework's rules whatever the module (issue 46).
const t = useTestApp({ customers: ['acme', 'globex'] });
const host = 'acme.localhost';
const WIDGETS = '/api/v1/testkit/widgets';
const ARTICLES = '/api/v1/testkit/articles';
const MEMOS = '/api/v1/testkit/memos';

interface Revision {
  id: string;
  actor: { kind: string; userId: string | null; name: string | null };
  operation: string;
  changes: { field: string; old: unknown; new: unknown }[];
}

let writer: SignedIn | undefined;
const caller = async () =>
  (writer ??= await signInAs(t.app, t.acme, ['widget:read', 'widget:write', 'article:read', 'article:write']));
const http = () => t.app.http(host);
let counter = 0;
const unique = (prefix: string) => `${prefix}-${++counter}-${Date.now().toString(36)}`;

async function createWidget(body: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const res = await http()
    .post(WIDGETS)
    .set('Cookie', (await caller()).cookie)
    .set(headers)
    .send({ name: unique('w'), size: 1, color: 'red', ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as Record<string, unknown> & { id: string };
}

async function historyOf(path: string, cookie?: string): Promise<Revision[]> {
  const res = await http()
    .get(`${path}/history`)
    .set('Cookie', cookie ?? (await caller()).cookie);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.items;
}

/** The stored revisions of a row, oldest first, as the table holds them (the test reads as the owner). */
async function storedRevisions(rowId: string) {
  const { rows } = await t.app.services.db.pool.query<{
    operation: string;
    old_values: Record<string, unknown>;
    new_values: Record<string, unknown>;
    actor_kind: string;
    actor_name: string | null;
    actor_id: string | null;
  }>(
    `select operation, old_values, new_values, actor_kind, actor_name, actor_id from revisions where row_id = $1 order by id`,
    [rowId],
  );
  return rows;
}

describe('what history records', () => {
  it('a PATCH that changes nothing records nothing, as it publishes nothing', async () => {
    const widget = await createWidget({ size: 3 });
    const same = await http()
      .patch(`${WIDGETS}/${widget.id}`)
      .set('Cookie', (await caller()).cookie)
      .send({ size: 3 });
    expect(same.status).toBe(200);
    expect((await storedRevisions(widget.id)).map((r) => r.operation)).toEqual(['create']);
  });

  it('a rolled-back transaction leaves no revision: the revision is written in the write’s own transaction', async () => {
    const widget = await createWidget();
    const ops = t.app.services.operations.of('testkit.widget');
    await expect(
      t.app.services.transactions.run(t.acme, async (ctx) => {
        await ops.update(ctx, widget.id, { size: 77 });
        throw new Error('refused after the write');
      }),
    ).rejects.toThrow('refused after the write');
    expect((await storedRevisions(widget.id)).map((r) => r.operation)).toEqual(['create']);
    const read = await http()
      .get(`${WIDGETS}/${widget.id}`)
      .set('Cookie', (await caller()).cookie);
    expect(read.body.size).toBe(1);
  });

  it('the one-exchange create records the same revision as the handler’s create', async () => {
    const viaExchange = await createWidget({ name: 'same-a', size: 5 });
    // An Idempotency-Key sends the create through the handler's transaction instead.
    const viaHandler = await createWidget({ name: 'same-b', size: 5 }, { 'Idempotency-Key': unique('key') });
    const [a] = await storedRevisions(viaExchange.id);
    const [b] = await storedRevisions(viaHandler.id);
    expect(a).toEqual({ ...b, new_values: { ...b!.new_values, name: 'same-a' } });
    expect(a!.new_values).toEqual({
      name: 'same-a',
      size: 5,
      color: 'red',
      approved: false,
      approvedAt: null,
    });
    expect(a).toMatchObject({ operation: 'create', old_values: {}, actor_kind: 'user', actor_id: writer!.userId });
  });

  it('a field declared unrecorded (the widget’s note) never reaches a revision, and its change alone records an empty one', async () => {
    const widget = await createWidget({ note: 'first note' });
    const cookie = (await caller()).cookie;
    expect((await http().patch(`${WIDGETS}/${widget.id}`).set('Cookie', cookie).send({ note: 'second' })).status).toBe(
      200,
    );
    expect(
      (await http().patch(`${WIDGETS}/${widget.id}`).set('Cookie', cookie).send({ note: 'third', size: 9 })).status,
    ).toBe(200);
    const stored = await storedRevisions(widget.id);
    expect(stored.map((r) => [r.operation, r.old_values, r.new_values])).toEqual([
      ['create', {}, { name: widget.name, size: 1, color: 'red', approved: false, approvedAt: null }],
      ['update', {}, {}],
      ['update', { size: 1 }, { size: 9 }],
    ]);
    expect(JSON.stringify(await historyOf(`${WIDGETS}/${widget.id}`))).not.toMatch(/note|first note|second|third/);
  });

  it('a command records its name as the operation; the actor of a personal access token is the person and the token’s name', async () => {
    const widget = await createWidget();
    const cookie = (await caller()).cookie;
    expect((await http().post(`${WIDGETS}/${widget.id}/approve`).set('Cookie', cookie).send({})).status).toBe(200);
    const made = await http()
      .post('/api/v1/auth/tokens')
      .set('Cookie', cookie)
      .send({ name: 'deploy-bot', permissions: ['widget:read', 'widget:write'] });
    expect(made.status).toBe(201);
    const patched = await http()
      .patch(`${WIDGETS}/${widget.id}`)
      .set('Authorization', `Bearer ${made.body.token}`)
      .send({ size: 12 });
    expect(patched.status).toBe(200);
    const [byToken, approve] = await historyOf(`${WIDGETS}/${widget.id}`);
    expect(byToken).toMatchObject({
      operation: 'update',
      actor: { kind: 'token', userId: writer!.userId, name: 'deploy-bot' },
      changes: [{ field: 'size', old: 1, new: 12 }],
    });
    expect(approve).toMatchObject({
      operation: 'approve',
      actor: { kind: 'user', userId: writer!.userId, name: null },
    });
    expect(approve!.changes.map((c) => c.field)).toEqual(['approved', 'approvedAt']);
  });

  it('a job’s write names the job as the actor', async () => {
    const widget = await createWidget();
    const touch: JobDefinition = {
      name: 'testkit-history-touch',
      cron: '0 0 * * *',
      perTenant: true,
      run: (ctx) =>
        ctx.transaction(async (tx) => {
          await t.app.services.operations.of('testkit.widget').update(tx, widget.id, { size: 42 });
        }),
    };
    await new JobRunner(t.app.services).run(touch, t.acme, new Date().toISOString());
    const [last] = (await storedRevisions(widget.id)).slice(-1);
    expect(last).toMatchObject({
      operation: 'update',
      actor_kind: 'job',
      actor_name: 'testkit-history-touch',
      actor_id: null,
    });
  });

  it('an entity declared history: false records none and serves no history route', async () => {
    const operator = await signInAs(t.app, t.app.operator, ['widget:read', 'widget:operate']);
    const created = await t.app
      .http(OPERATOR_HOST)
      .post('/api/v1/testkit/gadgets')
      .set('Cookie', operator.cookie)
      .send({ code: unique('g'), name: 'Gadget', price: 1 });
    expect(created.status).toBe(201);
    expect(await storedRevisions(created.body.id)).toEqual([]);
    const history = await t.app
      .http(OPERATOR_HOST)
      .get(`/api/v1/testkit/gadgets/${created.body.id}/history`)
      .set('Cookie', operator.cookie);
    expect(history.status).toBe(404);
    expect(history.body.code).toBe('ROUTE_NOT_FOUND');
  });
});

describe('reading a record’s history', () => {
  it('is newest first and paged like every list', async () => {
    const widget = await createWidget();
    const cookie = (await caller()).cookie;
    for (const size of [2, 3, 4]) {
      expect((await http().patch(`${WIDGETS}/${widget.id}`).set('Cookie', cookie).send({ size })).status).toBe(200);
    }
    const first = await http().get(`${WIDGETS}/${widget.id}/history?limit=3`).set('Cookie', cookie);
    expect(first.body).toMatchObject({ total: 4, totalExact: true, limit: 3, offset: 0, next: expect.any(String) });
    const second = await http()
      .get(`${WIDGETS}/${widget.id}/history?limit=3&after=${first.body.next}`)
      .set('Cookie', cookie);
    const sizes = [...first.body.items, ...second.body.items].map(
      (r: Revision) => r.changes.find((c) => c.field === 'size')!.new,
    );
    expect(sizes).toEqual([4, 3, 2, 1]);
    expect(second.body.next).toBeNull();
    const oldest = await http().get(`${WIDGETS}/${widget.id}/history?sort=at&limit=1`).set('Cookie', cookie);
    expect(oldest.body.items[0].operation).toBe('create');
  });

  it('answers 404 for an unknown record, another tenant’s, and one row access hides; a hard-deleted record has none', async () => {
    const cookie = (await caller()).cookie;
    const widget = await createWidget();
    expect(
      (
        await http()
          .get(`${WIDGETS}/${uuidv7(Date.now())}/history`)
          .set('Cookie', cookie)
      ).status,
    ).toBe(404);
    expect((await http().get(`${WIDGETS}/not-a-uuid/history`).set('Cookie', cookie)).status).toBe(404);
    const elsewhere = await signInAs(t.app, t.globex, ['widget:read']);
    const other = await t.app
      .http('globex.localhost')
      .get(`${WIDGETS}/${widget.id}/history`)
      .set('Cookie', elsewhere.cookie);
    expect(other.status).toBe(404);

    const memo = await http().post(MEMOS).set('Cookie', cookie).send({ ownerId: writer!.userId, text: 'mine alone' });
    expect(memo.status).toBe(201);
    expect((await historyOf(`${MEMOS}/${memo.body.id}`)).map((r) => r.operation)).toEqual(['create']);
    const stranger = await signInAs(t.app, t.acme, ['widget:read', 'widget:write']);
    expect((await http().get(`${MEMOS}/${memo.body.id}/history`).set('Cookie', stranger.cookie)).status).toBe(404);
    expect((await http().delete(`${MEMOS}/${memo.body.id}`).set('Cookie', cookie)).status).toBe(204);
    expect((await http().get(`${MEMOS}/${memo.body.id}/history`).set('Cookie', cookie)).status).toBe(404);
  });

  it('answers the same 404 past the first page: an offset makes no empty page of a record that is not there', async () => {
    const cookie = (await caller()).cookie;
    const widget = await createWidget();
    // The record's own history past its end is an empty page, as any list's.
    const past = await http().get(`${WIDGETS}/${widget.id}/history?offset=5`).set('Cookie', cookie);
    expect(past.status, JSON.stringify(past.body)).toBe(200);
    expect(past.body).toMatchObject({ items: [], total: 1 });
    const unknown = await http()
      .get(`${WIDGETS}/${uuidv7(Date.now())}/history?offset=1`)
      .set('Cookie', cookie);
    expect(unknown.status, JSON.stringify(unknown.body)).toBe(404);
    expect(unknown.body.code).toBe('NOT_FOUND');
    const elsewhere = await signInAs(t.app, t.globex, ['widget:read']);
    const other = await t.app
      .http('globex.localhost')
      .get(`${WIDGETS}/${widget.id}/history?offset=1`)
      .set('Cookie', elsewhere.cookie);
    expect(other.status, JSON.stringify(other.body)).toBe(404);
    const memo = await http().post(MEMOS).set('Cookie', cookie).send({ ownerId: writer!.userId, text: 'mine' });
    const stranger = await signInAs(t.app, t.acme, ['widget:read', 'widget:write']);
    const hidden = await http().get(`${MEMOS}/${memo.body.id}/history?offset=1`).set('Cookie', stranger.cookie);
    expect(hidden.status, JSON.stringify(hidden.body)).toBe(404);
    expect((await http().delete(`${MEMOS}/${memo.body.id}`).set('Cookie', cookie)).status).toBe(204);
    const gone = await http().get(`${MEMOS}/${memo.body.id}/history?offset=1`).set('Cookie', cookie);
    expect(gone.status, JSON.stringify(gone.body)).toBe(404);
  });

  it('never shows a field the read route does not show, whatever a revision holds', async () => {
    const widget = await createWidget();
    // A revision written under an older definition, holding a field the entity no longer shows.
    await t.app.services.transactions.run(t.acme, async (ctx) => {
      await ctx.db.executeQuery(
        CompiledQuery.raw(
          `insert into revisions (id, entity, row_id, at, actor_kind, operation, old_values, new_values)
           values ($1, 'testkit.widget', $2, now(), 'system', 'update', $3, $4)`,
          [
            uuidv7(Date.now() + 1000),
            widget.id,
            JSON.stringify({ size: 1, internalCode: 'old-secret', note: 'hidden' }),
            JSON.stringify({ size: 2, internalCode: 'new-secret', note: 'hidden too' }),
          ],
        ),
      );
    });
    const [planted] = await historyOf(`${WIDGETS}/${widget.id}`);
    expect(planted!.changes).toEqual([{ field: 'size', old: 1, new: 2 }]);
  });
});

describe('restore', () => {
  it('brings a soft-deleted record back to life, readable again, with a revision whose operation is restore', async () => {
    const cookie = (await caller()).cookie;
    const slug = unique('story');
    const created = await http().post(ARTICLES).set('Cookie', cookie).send({ slug, title: 'First', body: 'One' });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    expect((await http().patch(`${ARTICLES}/${id}`).set('Cookie', cookie).send({ title: 'Second' })).status).toBe(200);
    expect((await http().delete(`${ARTICLES}/${id}`).set('Cookie', cookie)).status).toBe(204);
    expect((await http().get(`${ARTICLES}/${id}`).set('Cookie', cookie)).status).toBe(404);
    // Its history stays readable once deleted.
    const history = await historyOf(`${ARTICLES}/${id}`);
    expect(history.map((r) => r.operation)).toEqual(['delete', 'update', 'create']);
    const restored = await http()
      .post(`${ARTICLES}/${id}/restore`)
      .set('Cookie', cookie)
      .send({ revision: history[2]!.id });
    expect(restored.status).toBe(200);
    expect(restored.body).toMatchObject({ row: { id, title: 'First', slug }, restored: ['title'], kept: [] });
    const read = await http().get(`${ARTICLES}/${id}`).set('Cookie', cookie);
    expect(read.status).toBe(200);
    expect(read.body.title).toBe('First');
    const after = await historyOf(`${ARTICLES}/${id}`);
    expect(after[0]).toMatchObject({
      operation: 'restore',
      changes: [{ field: 'title', old: 'Second', new: 'First' }],
    });
    // The updated event went out, as a PATCH's does.
    const { rows } = await t.app.services.db.pool.query(
      `select payload from outbox where name = 'testkit.article.updated' and payload->>'id' = $1 order by id`,
      [id],
    );
    expect(rows.at(-1)!.payload).toMatchObject({ id, changed: ['title'] });
  });

  it('is 409 when a unique value was taken meanwhile, and changes nothing', async () => {
    const cookie = (await caller()).cookie;
    const slug = unique('taken');
    const first = await http().post(ARTICLES).set('Cookie', cookie).send({ slug, title: 'Old', body: '' });
    expect((await http().delete(`${ARTICLES}/${first.body.id}`).set('Cookie', cookie)).status).toBe(204);
    expect((await http().post(ARTICLES).set('Cookie', cookie).send({ slug, title: 'New', body: '' })).status).toBe(201);
    const [, create] = await historyOf(`${ARTICLES}/${first.body.id}`);
    const refused = await http()
      .post(`${ARTICLES}/${first.body.id}/restore`)
      .set('Cookie', cookie)
      .send({ revision: create!.id });
    expect(refused.status).toBe(409);
    // The test kit declares no words for its key; the content module's slug answers SLUG_TAKEN naming the field (content-history.test.ts).
    expect(refused.body).toMatchObject({ code: 'ALREADY_EXISTS' });
    expect((await http().get(`${ARTICLES}/${first.body.id}`).set('Cookie', cookie)).status).toBe(404);
    expect((await historyOf(`${ARTICLES}/${first.body.id}`)).map((r) => r.operation)).toEqual(['delete', 'create']);
  });

  it('leaves command-owned fields as they are and names them', async () => {
    const widget = await createWidget();
    const cookie = (await caller()).cookie;
    expect((await http().post(`${WIDGETS}/${widget.id}/approve`).set('Cookie', cookie).send({})).status).toBe(200);
    const create = (await historyOf(`${WIDGETS}/${widget.id}`)).at(-1)!;
    const res = await http()
      .post(`${WIDGETS}/${widget.id}/restore`)
      .set('Cookie', cookie)
      .send({ revision: create.id });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ restored: [], row: { approved: true } });
    expect(res.body.kept).toEqual([
      { field: 'approved', reason: 'command-owned' },
      { field: 'approvedAt', reason: 'command-owned' },
    ]);
    // Nothing restorable differed: no write, no revision.
    expect((await historyOf(`${WIDGETS}/${widget.id}`)).map((r) => r.operation)).toEqual(['approve', 'create']);
  });

  it('is 422 for a revision of another record, and needs the write permission', async () => {
    const cookie = (await caller()).cookie;
    const one = await createWidget();
    const two = await createWidget();
    const [ofTwo] = await historyOf(`${WIDGETS}/${two.id}`);
    const res = await http().post(`${WIDGETS}/${one.id}/restore`).set('Cookie', cookie).send({ revision: ofTwo!.id });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([{ pointer: '/body/revision', message: expect.any(String) }]);
    const malformed = await http().post(`${WIDGETS}/${one.id}/restore`).set('Cookie', cookie).send({ revision: 'x' });
    expect(malformed.status).toBe(422);
    const reader = await signInAs(t.app, t.acme, ['widget:read']);
    const forbidden = await http()
      .post(`${WIDGETS}/${one.id}/restore`)
      .set('Cookie', reader.cookie)
      .send({ revision: ofTwo!.id });
    expect(forbidden.status).toBe(403);
  });

  it('works on a singleton through its PATCH, and reads its history', async () => {
    const cookie = (await caller()).cookie;
    expect(
      (await http().post('/api/v1/testkit/setting/activate').set('Cookie', cookie).send({ theme: 'dark' })).status,
    ).toBe(200);
    expect((await http().patch('/api/v1/testkit/setting').set('Cookie', cookie).send({ theme: 'light' })).status).toBe(
      200,
    );
    const history = await historyOf('/api/v1/testkit/setting');
    expect(history.map((r) => r.operation)).toEqual(['update', 'activate']);
    const res = await http()
      .post('/api/v1/testkit/setting/restore')
      .set('Cookie', cookie)
      .send({ revision: history[1]!.id });
    expect(res.status).toBe(200);
    expect(res.body.row.theme).toBe('dark');
  });
});
