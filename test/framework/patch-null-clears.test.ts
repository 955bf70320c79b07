import { describe, expect, it } from 'vitest';
import Type from 'typebox';
import { sessionFormToken } from '../../framework/access/form-token.ts';
import { defineEntity, entity } from '../../framework/entity/define.ts';
import { resolveEntity } from '../../framework/entity/resolve.ts';
import { WithDefault } from '../../framework/entity/storage.ts';
import { entityTableProblems, type ColumnInfo } from '../../framework/entity/table-check.ts';
import { signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';

/**
 * Issue 41, point 8 ("Clearing a field"): PATCH takes null for an optional field and clears it,
 * as reads answer null for an optional field without a value (docs/api-conventions.md). A field
 * that is required, or optional with a default (never null in reads), still takes a value only.
 */
const t = useTestApp({ customers: ['clears'] });
const HOST = 'clears.localhost';
const TASKS = '/api/v1/task/tasks';
const deadline = '2031-01-01T00:00:00.000Z';

async function manager() {
  return signInAs(t.app, t.clears, ['task:read', 'task:update']);
}

const updatedEvents = async (id: string) =>
  (
    await t.app.services.db.pool.query<{ payload: { changed: string[] } }>(
      `select payload from outbox where name = 'task.task.updated' and payload->>'id' = $1 order by id`,
      [id],
    )
  ).rows.map((r) => r.payload.changed);

describe('PATCH clears an optional field sent as null', () => {
  it('description: null stores null; the answer and later reads say null; task.task.updated names it', async () => {
    const who = await manager();
    const http = t.app.http(HOST);
    const created = await http
      .post(TASKS)
      .set('Cookie', who.cookie)
      .send({ title: 'Clear me', priority: 'low', deadline, description: 'Some *text*' });
    expect(created.status).toBe(201);
    const patched = await http
      .patch(`${TASKS}/${created.body.id}`)
      .set('Cookie', who.cookie)
      .send({ description: null });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.description).toBeNull();
    const read = await http.get(`${TASKS}/${created.body.id}`).set('Cookie', who.cookie);
    expect(read.body.description).toBeNull();
    const { rows } = await t.app.services.db.pool.query('select description from tasks where id = $1', [
      created.body.id,
    ]);
    expect(rows[0].description).toBeNull();
    expect(await updatedEvents(created.body.id)).toEqual([['description']]);

    // Clearing what is already clear changes nothing and publishes nothing.
    const again = await http.patch(`${TASKS}/${created.body.id}`).set('Cookie', who.cookie).send({ description: null });
    expect(again.status).toBe(200);
    expect(await updatedEvents(created.body.id)).toEqual([['description']]);
  });

  it('an empty string is still a value, not a clearing', async () => {
    const who = await manager();
    const http = t.app.http(HOST);
    const created = await http
      .post(TASKS)
      .set('Cookie', who.cookie)
      .send({ title: 'Empty', priority: 'low', deadline });
    const patched = await http.patch(`${TASKS}/${created.body.id}`).set('Cookie', who.cookie).send({ description: '' });
    expect(patched.status).toBe(200);
    expect(patched.body.description).toBe('');
  });

  it('a required field, and an optional one with a default, refuse null with 422 naming the field', async () => {
    const who = await manager();
    const http = t.app.http(HOST);
    const created = await http.post(TASKS).set('Cookie', who.cookie).send({ title: 'Keep', priority: 'low', deadline });
    for (const field of ['title', 'status', 'deadline']) {
      const res = await http
        .patch(`${TASKS}/${created.body.id}`)
        .set('Cookie', who.cookie)
        .send({ [field]: null });
      expect(res.status, field).toBe(422);
      expect(res.body.code).toBe('VALIDATION_FAILED');
      expect(res.body.errors.map((e: { pointer: string }) => e.pointer)).toContain(`/body/${field}`);
    }
    const read = await http.get(`${TASKS}/${created.body.id}`).set('Cookie', who.cookie);
    expect(read.body).toMatchObject({ title: 'Keep', status: 'open', deadline });
  });

  it('a wrong type for a clearable field says it must be the type or null, once', async () => {
    const who = await manager();
    const http = t.app.http(HOST);
    const created = await http
      .post(TASKS)
      .set('Cookie', who.cookie)
      .send({ title: 'Typed', priority: 'low', deadline });
    const res = await http.patch(`${TASKS}/${created.body.id}`).set('Cookie', who.cookie).send({ description: 5 });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([{ pointer: '/body/description', message: 'must be either string or null' }]);
  });

  it('the same for every entity: the test kit’s widget clears its note', async () => {
    const who = await signInAs(t.app, t.clears, ['widget:read', 'widget:write']);
    const http = t.app.http(HOST);
    const created = await http
      .post('/api/v1/testkit/widgets')
      .set('Cookie', who.cookie)
      .send({ name: 'w-clear', size: 1, color: 'red', note: 'a note' });
    expect(created.status).toBe(201);
    const patched = await http
      .patch(`/api/v1/testkit/widgets/${created.body.id}`)
      .set('Cookie', who.cookie)
      .send({ note: null });
    expect(patched.status).toBe(200);
    expect(patched.body.note).toBeNull();
  });

  it('the admin edit form clears an optional field whose input was emptied', async () => {
    const who = await signInAs(t.app, t.clears, ['*']);
    const http = t.app.http(HOST);
    const created = await http
      .post(TASKS)
      .set('Cookie', who.cookie)
      .send({ title: 'Form', priority: 'low', deadline, description: 'Will go' });
    const edited = await http
      .post(`/admin/task/tasks/${created.body.id}/edit`)
      .set('Cookie', who.cookie)
      .type('form')
      .send({
        csrf: sessionFormToken(who.rawSessionId),
        title: 'Form',
        priority: 'low',
        deadline: '2031-01-01T00:00',
        description: '',
      });
    expect(edited.status, edited.text).toBe(303);
    const read = await http.get(`${TASKS}/${created.body.id}`).set('Cookie', who.cookie);
    expect(read.body).toMatchObject({ title: 'Form', description: null });
  });
});

describe('OpenAPI says which PATCH fields are nullable', () => {
  it('TaskUpdate: description is string or null; title, status and deadline are not', async () => {
    const doc = (await t.app.http(HOST).get('/api/v1/openapi.json')).body;
    const update = doc.components.schemas.TaskUpdate.properties;
    expect(update.description.type).toEqual(['string', 'null']);
    expect(update.title.type).toBe('string');
    expect(JSON.stringify(update.status)).not.toContain('null');
    expect(JSON.stringify(update.deadline)).not.toContain('null');
    // Create does not take null: leaving the field out is how a create says "none".
    expect(doc.components.schemas.TaskCreate.properties.description.type).toBe('string');
    const patch = doc.paths['/api/v1/task/tasks/{id}'].patch;
    expect(patch.description).toContain('description may be sent as null, which clears it');
  });
});

describe('boot check: a clearable field needs a column that takes null', () => {
  const column = (type: string, notNull: boolean, defaultExpr: string | null = null): ColumnInfo => ({
    type,
    notNull,
    hasDefault: defaultExpr !== null,
    defaultExpr,
  });
  const table = (note: ColumnInfo) => ({
    name: 'notes',
    rowSecurity: true,
    forcedRowSecurity: true,
    policies: 1,
    triggerFunctions: [],
    columns: new Map(
      Object.entries({
        id: column('uuid', true, 'gen_random_uuid()'),
        created_at: column('timestamptz', true, 'now()'),
        updated_at: column('timestamptz', true, 'now()'),
        deleted_at: column('timestamptz', false),
        tenant_id: column('uuid', true, 'app_tenant_id()'),
        note: note,
      }),
    ),
  });
  const note = (schema: ReturnType<typeof Type.Optional>) =>
    resolveEntity(
      entity(
        defineEntity({
          module: 'memo',
          name: 'note',
          fields: { note: schema },
          permissions: { read: 'r', write: 'w' },
        }),
      ),
    );

  it('refuses an optional field without a declared default over a not-null column (PATCH null would fail)', () => {
    const optional = note(Type.Optional(Type.String()));
    expect(entityTableProblems(optional, table(column('text', true, "''")))).toEqual([
      'entity memo.note: field note is optional with no declared default, so PATCH may clear it with null, but column notes.note is not null; declare its default with WithDefault() or let the column allow null',
    ]);
    expect(entityTableProblems(optional, table(column('text', false)))).toEqual([]);
    const defaulted = note(Type.Optional(WithDefault(Type.String(), '')));
    expect(entityTableProblems(defaulted, table(column('text', true, "''")))).toEqual([]);
  });
});
