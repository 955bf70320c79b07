import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compose } from '../../framework/composition.ts';
import type { AnyEntity, ModuleDefinition } from '../../framework/entity/define.ts';
import { allModules } from '../../modules/index.ts';
import { task } from '../../modules/task/task.entity.ts';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

/**
 * Issue 35, point 4: commands declare the states they accept (CommandDefinition.states against the
 * entity's states.field). The framework refuses any other state before the command runs, with the
 * entity's code (task: 409 INVALID_TRANSITION, content: 409 INVALID_STATE) naming the field and the
 * state; a create outside states.initial is refused the same way; declarations that name states
 * the field cannot hold stop the service at boot.
 */

let app: TestApp;
let acme: TenantRef;
let manager: SignedIn;
let worker: SignedIn;
const host = 'states-acme.localhost';
const TASKS = '/api/v1/task/tasks';

beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'states-acme', host);
  manager = await signInAs(app, acme, ['task:read', 'task:update', 'content:read', 'content:manage']);
  // An assignee must be able to read tasks (issue 41: assignment).
  worker = await signInAs(app, acme, ['task:read']);
});
afterAll(async () => {
  await app?.close();
});

const post = (path: string, body?: Record<string, unknown>) => {
  const req = app.http(host).post(path).set('Cookie', manager.cookie);
  return body ? req.send(body) : req;
};
const newTask = async (extra: Record<string, unknown> = {}) =>
  post(TASKS, { title: 'Fix it', priority: 'low', deadline: '2099-01-01T00:00:00Z', ...extra });
const outboxCount = async (name: string, id: string) =>
  Number(
    (
      await app.services.db.pool.query(`select count(*) as n from outbox where name = $1 and payload->>'id' = $2`, [
        name,
        id,
      ])
    ).rows[0].n,
  );

describe('task: assign and resolve accept open, acknowledged and in_progress only', () => {
  it('a resolved task refuses assign with 409 INVALID_TRANSITION naming status and the state; nothing written or published', async () => {
    const { body } = await newTask();
    expect((await post(`${TASKS}/${body.id}/resolve`, { resolution: 'done' })).status).toBe(200);
    const res = await post(`${TASKS}/${body.id}/assign`, { assigneeId: worker.userId });
    expect(res.status).toBe(409);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ code: 'INVALID_TRANSITION', field: 'status', state: 'resolved' });
    const after = await app.http(host).get(`${TASKS}/${body.id}`).set('Cookie', manager.cookie);
    expect(after.body).toMatchObject({ status: 'resolved', assigneeId: null });
    expect(await outboxCount('task.assigned', body.id)).toBe(0);
  });

  it('a resolved or closed task refuses resolve with 409 INVALID_TRANSITION', async () => {
    const { body } = await newTask();
    expect((await post(`${TASKS}/${body.id}/resolve`, { resolution: 'done' })).status).toBe(200);
    expect((await post(`${TASKS}/${body.id}/resolve`, { resolution: 'again' })).body).toMatchObject({
      code: 'INVALID_TRANSITION',
      state: 'resolved',
    });
    expect(
      (await app.http(host).patch(`${TASKS}/${body.id}`).set('Cookie', manager.cookie).send({ status: 'closed' }))
        .status,
    ).toBe(200);
    expect((await post(`${TASKS}/${body.id}/assign`, { assigneeId: worker.userId })).body).toMatchObject({
      code: 'INVALID_TRANSITION',
      state: 'closed',
    });
    expect((await post(`${TASKS}/${body.id}/resolve`, { resolution: 'again' })).body).toMatchObject({
      code: 'INVALID_TRANSITION',
      state: 'closed',
    });
  });

  it('an open task takes assign and check-sla (which declares no states) as before', async () => {
    const { body } = await newTask();
    expect((await post(`${TASKS}/${body.id}/assign`, { assigneeId: worker.userId })).body).toMatchObject({
      status: 'acknowledged',
      assigneeId: worker.userId,
    });
    expect((await post(`${TASKS}/${body.id}/check-sla`)).status).toBe(200);
  });
});

describe('task: a create may only say open (states.initial)', () => {
  it('refuses any other status with 409 INVALID_TRANSITION naming status; open and no status create', async () => {
    for (const status of ['acknowledged', 'in_progress', 'resolved', 'closed']) {
      const res = await newTask({ status });
      expect(res.status, status).toBe(409);
      expect(res.body, status).toMatchObject({ code: 'INVALID_TRANSITION', field: 'status', state: status });
    }
    expect((await newTask({ status: 'open' })).status).toBe(201);
    expect((await newTask()).body.status).toBe('open');
  });
});

describe('content: publish refuses archived with 409 INVALID_STATE, and repeats change nothing', () => {
  it('answers an archived publish with the state and how to get out of it', async () => {
    const created = await post('/api/v1/content/contents', {
      slug: 'states-page',
      title: 'A page',
      kind: 'page',
      body: 'Hello',
    });
    expect(created.status).toBe(201);
    const id = created.body.id;
    expect((await post(`/api/v1/content/contents/${id}/archive`)).status).toBe(200);
    const res = await post(`/api/v1/content/contents/${id}/publish`);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'INVALID_STATE', field: 'status', state: 'archived' });
    expect(res.body.detail).toContain('unpublish');
    expect(await outboxCount('content.published', id)).toBe(0);
  });
});

describe('user: set-password and deactivate act on invited and active users', () => {
  it('a deactivated user refuses set-password with 409 INVALID_STATE, and a second deactivate changes nothing', async () => {
    const admin = await signInAs(app, acme, ['*']);
    const person = await signInAs(app, acme, []);
    const users = (path: string, body?: object) => {
      const req = app.http(host).post(`/api/v1/user/users/${person.userId}/${path}`).set('Cookie', admin.cookie);
      return body ? req.send(body) : req;
    };
    expect((await users('deactivate')).body.status).toBe('deactivated');
    expect(await outboxCount('user.deactivated', person.userId)).toBe(1);
    const again = await users('deactivate');
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('deactivated');
    expect(await outboxCount('user.deactivated', person.userId)).toBe(1);
    const refused = await users('set-password', { password: 'a long enough password' });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'INVALID_STATE', field: 'status', state: 'deactivated' });
  });
});

describe('OpenAPI', () => {
  it("documents each command's declared states in its 409", async () => {
    const doc = (await app.http().get('/api/v1/openapi.json').expect(200)).body;
    const conflict = (path: string) => doc.paths[path].post.responses['409'].description as string;
    expect(conflict('/api/v1/task/tasks/{id}/assign')).toContain(
      "INVALID_TRANSITION: the task's status is not one of open, acknowledged, in_progress",
    );
    expect(conflict('/api/v1/content/contents/{id}/publish')).toContain(
      'when it is published the command changes nothing',
    );
    // A command's own 409 is kept beside its states'.
    expect(conflict('/api/v1/user/users/{id}/deactivate')).toMatch(/LAST_ADMINISTRATOR.*INVALID_STATE/);
  });
});

describe('boot checks on the declared states', () => {
  const withTask = (changed: AnyEntity): ModuleDefinition[] =>
    allModules.map((module) => (module.name === 'task' ? { ...module, entities: [changed] } : module));
  const taskEntity = task as unknown as AnyEntity;
  const assign = taskEntity.commands!.assign!;

  it('refuses a command state the state field cannot hold', () => {
    const changed = {
      ...taskEntity,
      commands: { ...taskEntity.commands, assign: { ...assign, states: { from: ['open', 'parked'] } } },
    };
    expect(() => compose(withTask(changed), testConfig())).toThrow(
      /command assign states names parked, which status cannot hold/,
    );
  });

  it('refuses a command whose declared destination (states.to) the state field cannot hold', () => {
    const changed = {
      ...taskEntity,
      commands: { ...taskEntity.commands, assign: { ...assign, states: { from: ['open'], to: 'parked' } } },
    };
    expect(() => compose(withTask(changed), testConfig())).toThrow(
      /command assign states names parked, which status cannot hold/,
    );
  });

  it('refuses command states on an entity with no state field', () => {
    const { states: _none, ...withoutStates } = taskEntity;
    expect(() => compose(withTask(withoutStates as AnyEntity), testConfig())).toThrow(
      /command assign declares states, but the entity declares no state field/,
    );
  });

  it('refuses a refusal code that is not a 409', () => {
    const changed = { ...taskEntity, states: { ...taskEntity.states!, refusal: 'VALIDATION_FAILED' as const } };
    expect(() => compose(withTask(changed), testConfig())).toThrow(/states.refusal VALIDATION_FAILED is not a 409/);
  });
});
