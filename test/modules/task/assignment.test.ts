import { describe, expect, it } from 'vitest';
import Type from 'typebox';
import { CompiledQuery } from 'kysely';
import { sessionFormToken } from '../../../framework/access/form-token.ts';
import { defineCommand, defineEntity, defineModule, entity } from '../../../framework/entity/define.ts';
import { compose } from '../../../framework/composition.ts';
import { allModules } from '../../../modules/index.ts';
import { signInAs, type SignedIn } from '../../helpers/app.ts';
import { testConfig } from '../../helpers/config.ts';
import { useTestApp } from '../../helpers/use-test-app.ts';

/**
 * Issue 41, point 8 ("Assignment"): a task goes only to a person who can act on it: an active
 * user of the tenant whose roles grant task:read (their notification links to the task). Anyone
 * else is 422 with the reason; the admin picker offers nobody else; unassign takes the assignee
 * off and moves the task back to open.
 */
const t = useTestApp({ customers: ['assigning'] });
const HOST = 'assigning.localhost';
const TASKS = '/api/v1/task/tasks';

let seq = 0;
const manager = () => signInAs(t.app, t.assigning, ['task:read', 'task:update']);
const person = (permissions: string[], email?: string) =>
  signInAs(t.app, t.assigning, permissions, { email: email ?? `p${++seq}-${Date.now()}@assigning.test` });
const setStatus = (who: SignedIn, status: string) =>
  t.app.services.transactions.run(t.assigning, (ctx) =>
    ctx.db.executeQuery(CompiledQuery.raw('update users set status = $1 where id = $2', [status, who.userId])),
  );
const newTask = async (by: SignedIn, title = 'Do it') =>
  (
    await t.app
      .http(HOST)
      .post(TASKS)
      .set('Cookie', by.cookie)
      .send({ title, priority: 'high', deadline: '2031-01-01T00:00:00Z' })
  ).body.id as string;
const post = (by: SignedIn, id: string, command: string, body?: object) => {
  const req = t.app.http(HOST).post(`${TASKS}/${id}/${command}`).set('Cookie', by.cookie);
  return body ? req.send(body) : req;
};
const events = async (name: string, id: string) =>
  (
    await t.app.services.db.pool.query(
      `select payload from outbox where name = $1 and payload->>'id' = $2 order by id`,
      [name, id],
    )
  ).rows.map((r) => r.payload);
const notificationsOf = async (userId: string) =>
  (
    await t.app.services.transactions.run(t.assigning, (ctx) =>
      ctx.db.executeQuery<{ id: string }>(
        CompiledQuery.raw('select id from notifications where recipient_id = $1', [userId]),
      ),
    )
  ).rows;

describe('assign: only to a person who can act on the task', () => {
  it('refuses a user who cannot read tasks with 422 saying why; nothing assigned, published or notified', async () => {
    const by = await manager();
    const id = await newTask(by);
    const reader = await person(['content:read']);
    const res = await post(by, id, 'assign', { assigneeId: reader.userId });
    expect(res.status).toBe(422);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    const why = 'this user cannot read tasks: none of their roles grants task:read, so they could not open the task';
    expect(res.body.errors).toEqual([{ pointer: '/body/assigneeId', message: why }]);
    expect(res.body.detail).toBe(`assigneeId: ${why}`);
    const read = await t.app.http(HOST).get(`${TASKS}/${id}`).set('Cookie', by.cookie);
    expect(read.body).toMatchObject({ assigneeId: null, status: 'open' });
    expect(await events('task.assigned', id)).toEqual([]);
    expect(await notificationsOf(reader.userId)).toEqual([]);
  });

  it('takes a user holding task:read, or a role granting everything; the roles are read at the time', async () => {
    const by = await manager();
    const reader = await person(['task:read']);
    const first = await newTask(by);
    expect((await post(by, first, 'assign', { assigneeId: reader.userId })).body).toMatchObject({
      assigneeId: reader.userId,
      status: 'acknowledged',
    });
    const everything = await person(['*']);
    const second = await newTask(by);
    expect((await post(by, second, 'assign', { assigneeId: everything.userId })).status).toBe(200);
    // Refused while no role grants task:read; taken once the role does.
    const later = await person([]);
    const third = await newTask(by);
    expect((await post(by, third, 'assign', { assigneeId: later.userId })).status).toBe(422);
    await t.app.services.transactions.run(t.assigning, (ctx) =>
      ctx.db.executeQuery(
        CompiledQuery.raw(
          `update roles set permissions = '{task:read}' where name = (select roles[1] from users where id = $1)`,
          [later.userId],
        ),
      ),
    );
    expect((await post(by, third, 'assign', { assigneeId: later.userId })).status).toBe(200);
    expect(await events('task.assigned', third)).toEqual([{ id: third, assigneeId: later.userId }]);
  });

  it('refuses an unknown user, another tenant’s, an invited one and a deactivated one, each saying why', async () => {
    const by = await manager();
    const id = await newTask(by);
    const message = async (assigneeId: string) => {
      const res = await post(by, id, 'assign', { assigneeId });
      expect(res.status).toBe(422);
      return res.body.errors[0].message as string;
    };
    expect(await message('00000000-0000-4000-8000-000000000000')).toBe('no such user in this tenant');
    const invited = await person(['task:read']);
    await setStatus(invited, 'invited');
    expect(await message(invited.userId)).toBe(
      'this user is invited, not active, so they cannot sign in to act on the task',
    );
    const gone = await person(['task:read']);
    await setStatus(gone, 'deactivated');
    expect(await message(gone.userId)).toBe(
      'this user is deactivated, not active, so they cannot sign in to act on the task',
    );
    expect(await events('task.assigned', id)).toEqual([]);
  });
});

describe('the assignee’s notification', () => {
  it('a title cut to 200 characters never cuts a character in two (an emoji title of 150 characters)', async () => {
    const by = await manager();
    const worker = await person(['task:read']);
    // 150 characters (the title's limit counts code points), 300 UTF-16 code units.
    const title = '😀'.repeat(150);
    const id = await newTask(by, title);
    await post(by, id, 'assign', { assigneeId: worker.userId }).expect(200);
    const { body } = await t.app.http(HOST).get('/api/v1/notification/notifications').set('Cookie', worker.cookie);
    const notice = (body.items as { title: string }[])[0]!;
    expect(notice.title).not.toContain('\uFFFD');
    expect(notice.title.isWellFormed()).toBe(true);
    expect(notice.title).toMatch(/^Task assigned to you: (😀)+…$/u);
  });
});

describe('unassign', () => {
  it('takes the assignee off and moves the task back to open, publishing task.unassigned with who it was', async () => {
    const by = await manager();
    const worker = await person(['task:read']);
    const id = await newTask(by);
    await post(by, id, 'assign', { assigneeId: worker.userId }).expect(200);
    const res = await post(by, id, 'unassign');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, assigneeId: null, status: 'open' });
    expect(await events('task.unassigned', id)).toEqual([{ id, assigneeId: worker.userId }]);
    // Nobody assigned: nothing to take off, nothing published.
    expect((await post(by, id, 'unassign')).body).toMatchObject({ assigneeId: null, status: 'open' });
    expect(await events('task.unassigned', id)).toHaveLength(1);
    // Assignable again.
    expect((await post(by, id, 'assign', { assigneeId: worker.userId })).body.assigneeId).toBe(worker.userId);
  });

  it('from in_progress as from acknowledged; a resolved task keeps its assignee (409 INVALID_TRANSITION)', async () => {
    const by = await manager();
    const worker = await person(['task:read']);
    const started = await newTask(by);
    await post(by, started, 'assign', { assigneeId: worker.userId }).expect(200);
    await t.app
      .http(HOST)
      .patch(`${TASKS}/${started}`)
      .set('Cookie', by.cookie)
      .send({ status: 'in_progress' })
      .expect(200);
    expect((await post(by, started, 'unassign')).body).toMatchObject({ assigneeId: null, status: 'open' });
    const done = await newTask(by);
    await post(by, done, 'assign', { assigneeId: worker.userId }).expect(200);
    await post(by, done, 'resolve', { resolution: 'Done' }).expect(200);
    const refused = await post(by, done, 'unassign');
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'INVALID_TRANSITION', field: 'status', state: 'resolved' });
    expect(await events('task.unassigned', done)).toEqual([]);
  });

  it('needs task:update; a PATCH still cannot set the assignee and names both commands', async () => {
    const by = await manager();
    const id = await newTask(by);
    const reader = await person(['task:read']);
    expect((await post(reader, id, 'unassign')).status).toBe(403);
    const patched = await t.app.http(HOST).patch(`${TASKS}/${id}`).set('Cookie', by.cookie).send({ assigneeId: null });
    expect(patched.status).toBe(422);
    expect(patched.body).toMatchObject({
      code: 'FIELD_COMMAND_OWNED',
      routes: ['POST /api/v1/task/tasks/{id}/assign', 'POST /api/v1/task/tasks/{id}/unassign'],
    });
  });

  it('is in the OpenAPI document as task-task-unassign, with its 409', async () => {
    const doc = (await t.app.http(HOST).get('/api/v1/openapi.json')).body;
    const op = doc.paths['/api/v1/task/tasks/{id}/unassign']?.post;
    expect(op?.operationId).toBe('task-task-unassign');
    expect(op.responses['409']).toBeDefined();
    expect(op.description).toContain('task.unassigned');
  });
});

describe('the admin picker offers only people who can act', () => {
  it('Assign lists active people holding task:read, never a deactivated, invited or unprivileged one', async () => {
    const admin = await signInAs(t.app, t.assigning, ['*'], { email: 'picker-admin@assigning.test' });
    const able = await person(['task:read'], 'able@assigning.test');
    const gone = await person(['task:read'], 'gone@assigning.test');
    await setStatus(gone, 'deactivated');
    const invited = await person(['task:read'], 'invited@assigning.test');
    await setStatus(invited, 'invited');
    const unprivileged = await person(['content:read'], 'unprivileged@assigning.test');
    const id = await newTask(admin);
    const page = await t.app.http(HOST).get(`/admin/task/tasks/${id}/assign`).set('Cookie', admin.cookie);
    expect(page.status).toBe(200);
    const offered = [...page.text.matchAll(/<option value="([0-9a-f-]{36})"/g)].map((m) => m[1]);
    expect(offered).toContain(able.userId);
    expect(offered).toContain(admin.userId);
    for (const refused of [gone, invited, unprivileged]) expect(offered).not.toContain(refused.userId);
  });

  it('a refused post does not put the person it chose back among the options', async () => {
    const admin = await signInAs(t.app, t.assigning, ['*']);
    const unprivileged = await person(['content:read']);
    const id = await newTask(admin);
    const res = await t.app
      .http(HOST)
      .post(`/admin/task/tasks/${id}/assign`)
      .set('Cookie', admin.cookie)
      .type('form')
      .send({ csrf: sessionFormToken(admin.rawSessionId), assigneeId: unprivileged.userId });
    expect(res.status).toBe(422);
    expect(res.text).not.toContain(`<option value="${unprivileged.userId}"`);
  });

  it('the type-ahead for the field (_for) narrows the same way; the plain user list’s does not; an unknown _for is 422', async () => {
    const admin = await signInAs(t.app, t.assigning, ['*']);
    const able = await person(['task:read'], 'ahead-able@assigning.test');
    const unable = await person([], 'ahead-unable@assigning.test');
    const gone = await person(['task:read'], 'ahead-gone@assigning.test');
    await setStatus(gone, 'deactivated');
    const options = (query: string) =>
      t.app.http(HOST).get(`/admin/user/users/options?${query}`).set('Cookie', admin.cookie);
    const narrowed = await options('_for=task.task.assign.assigneeId&_q=ahead-');
    expect(narrowed.status).toBe(200);
    expect(narrowed.text).toContain(able.userId);
    expect(narrowed.text).not.toContain(unable.userId);
    expect(narrowed.text).not.toContain(gone.userId);
    const plain = await options('_q=ahead-');
    expect(plain.text).toContain(unable.userId);
    expect((await options('_for=user.user.roles.roles')).status).toBe(422);
  });
});

describe('boot check: an actor field', () => {
  const module = (actors: Record<string, string>, references: Record<string, string>) => {
    const fields = { name: Type.String() };
    const command = defineCommand(fields);
    return defineModule({
      name: 'crew',
      permissions: [
        { name: 'crew:read', description: 'Read' },
        { name: 'crew:write', description: 'Write' },
      ],
      entities: [
        entity(
          defineEntity({
            module: 'crew',
            name: 'shift',
            fields,
            permissions: { read: 'crew:read', write: 'crew:write' },
            commands: {
              staff: command({
                summary: 'Staff a shift',
                body: Type.Object({ personId: Type.String({ format: 'uuid' }) }),
                references,
                actors,
                async run() {},
              }),
            },
          }),
        ),
      ],
    });
  };
  const refusal = (mod: ReturnType<typeof module>) => {
    try {
      compose([...allModules, mod], testConfig());
      return '';
    } catch (err) {
      return (err as Error).message;
    }
  };

  it('must name a field of the body, referencing the users entity, with a declared permission', () => {
    expect(refusal(module({ personId: 'crew:read' }, { personId: 'user.user' }))).toBe('');
    expect(refusal(module({ personId: 'crew:read' }, {}))).toContain(
      "entity crew.shift: command staff: actor field personId must be a reference to the users entity (references: { personId: 'user.user' })",
    );
    expect(refusal(module({ otherId: 'crew:read' }, { otherId: 'user.user' }))).toContain(
      'entity crew.shift: command staff: actor field otherId is not a field of its body',
    );
    expect(refusal(module({ personId: 'crew:fly' }, { personId: 'user.user' }))).toContain(
      'entity crew.shift: command staff: actor field personId names undeclared permission crew:fly',
    );
  });
});
