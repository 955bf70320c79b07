import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { HOUR_MS, SettableClock } from '../../../framework/clock.ts';

const clock = new SettableClock();
let app: TestApp;
let acme: TenantRef;
let manager: SignedIn;
let reader: SignedIn;
let worker: SignedIn;
const host = 'tasks-acme.localhost';
const BASE = '/api/v1/task/tasks';

beforeAll(async () => {
  app = await startTestApp({ clock });
  acme = await createCustomer(app, 'tasks-acme');
  manager = await signInAs(app, acme, ['task:read', 'task:update']);
  reader = await signInAs(app, acme, ['task:read']);
  // An assignee must be able to read tasks (issue 41: assignment).
  worker = await signInAs(app, acme, ['task:read']);
});
afterAll(async () => {
  await app?.close();
});

const future = () => new Date(clock.now().getTime() + 24 * HOUR_MS).toISOString();
const past = () => new Date(clock.now().getTime() - HOUR_MS).toISOString();
const create = (body: Record<string, unknown> = {}) =>
  app
    .http(host)
    .post(BASE)
    .set('Cookie', manager.cookie)
    .send({ title: 'Fix it', priority: 'high', deadline: future(), ...body });
const patch = (id: string, body: Record<string, unknown>) =>
  app.http(host).patch(`${BASE}/${id}`).set('Cookie', manager.cookie).send(body);
const command = (id: string, name: string, body?: Record<string, unknown>) => {
  const req = app.http(host).post(`${BASE}/${id}/${name}`).set('Cookie', manager.cookie);
  return body ? req.send(body) : req;
};
const events = async (name: string, id: string) =>
  (
    await app.services.db.pool.query(`select payload from outbox where name = $1 and payload->>'id' = $2 order by id`, [
      name,
      id,
    ])
  ).rows.map((r) => r.payload);
const assigned = async () => {
  const { body } = await create();
  expect((await command(body.id, 'assign', { assigneeId: worker.userId })).status).toBe(200);
  return body.id as string;
};

describe('task entity', () => {
  it('creates an open task, slaBreached false, with the fields of the spec; task.task.created goes out', async () => {
    const res = await create({ description: '# Steps\n\n1. look' });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(
      [
        'assigneeId',
        'createdAt',
        'deadline',
        'description',
        'id',
        'priority',
        'resolution',
        'resolvedAt',
        'slaBreached',
        'status',
        'title',
        'updatedAt',
      ].sort(),
    );
    expect(res.body).toMatchObject({
      status: 'open',
      slaBreached: false,
      assigneeId: null,
      resolvedAt: null,
      resolution: null,
      priority: 'high',
    });
    expect(await events('task.task.created', res.body.id)).toHaveLength(1);
    expect((await app.http(host).get(`${BASE}/${res.body.id}`).set('Cookie', reader.cookie)).status).toBe(200);
    expect(
      (
        await app
          .http(host)
          .post(BASE)
          .set('Cookie', reader.cookie)
          .send({ title: 'x', priority: 'low', deadline: future() })
      ).status,
    ).toBe(403);
  });

  it('refuses assigneeId, slaBreached, resolvedAt and resolution on create and PATCH, naming the owning route', async () => {
    const { body: row } = await create();
    const owners = { assigneeId: 'assign', slaBreached: 'check-sla', resolvedAt: 'resolve', resolution: 'resolve' };
    const values = { assigneeId: worker.userId, slaBreached: true, resolvedAt: future(), resolution: 'done' };
    for (const [field, owner] of Object.entries(owners)) {
      const value = values[field as keyof typeof values];
      for (const res of [await create({ [field]: value }), await patch(row.id, { [field]: value })]) {
        expect(res.status, field).toBe(422);
        expect(res.body.code).toBe('FIELD_COMMAND_OWNED');
        expect(res.body.route).toBe(`POST /api/v1/task/tasks/{id}/${owner}`);
      }
    }
    // Nothing can forge a breach, nor clear one.
    expect((await patch(row.id, { slaBreached: false })).body.code).toBe('FIELD_COMMAND_OWNED');
  });

  it('refuses a title outside 1–200 characters of one line, and an unknown status or priority', async () => {
    for (const body of [
      { title: '' },
      { title: 'x'.repeat(201) },
      { title: 'two\nlines' },
      { priority: 'urgent' },
      { status: 'done' },
    ]) {
      expect((await create(body)).status, JSON.stringify(body)).toBe(422);
    }
    expect((await create({ title: 'x'.repeat(200) })).status).toBe(201);
  });
});

describe('status graph', () => {
  it('a new task is open: a create saying another status is 409 INVALID_TRANSITION', async () => {
    const res = await create({ status: 'in_progress' });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('INVALID_TRANSITION');
    expect((await create({ status: 'open' })).status).toBe(201);
  });

  it('PATCH follows open → acknowledged → in_progress, never into resolved; resolve, then closed; resolved → in_progress reopens', async () => {
    const id = await assigned();
    expect((await app.http(host).get(`${BASE}/${id}`).set('Cookie', manager.cookie)).body.status).toBe('acknowledged');
    expect((await patch(id, { status: 'closed' })).body.code).toBe('INVALID_TRANSITION');
    expect((await patch(id, { status: 'in_progress' })).body.status).toBe('in_progress');
    const intoResolved = await patch(id, { status: 'resolved' });
    expect(intoResolved.status).toBe(409);
    expect(intoResolved.body.code).toBe('INVALID_TRANSITION');
    expect((await command(id, 'resolve', { resolution: 'fixed' })).body.status).toBe('resolved');
    expect((await patch(id, { status: 'in_progress' })).body.status).toBe('in_progress');
    expect((await command(id, 'resolve', { resolution: 'fixed again' })).status).toBe(200);
    expect((await patch(id, { status: 'closed' })).body.status).toBe('closed');
    for (const status of ['open', 'acknowledged', 'in_progress', 'resolved']) {
      const res = await patch(id, { status });
      expect(res.status, status).toBe(409);
      expect(res.body.code).toBe('INVALID_TRANSITION');
    }
  });

  it('refuses acknowledged or in_progress for a task with no assignee, and open for an assigned one', async () => {
    const { body } = await create();
    for (const status of ['acknowledged', 'in_progress'])
      expect((await patch(body.id, { status })).body.code, status).toBe('INVALID_TRANSITION');
    const id = await assigned();
    expect((await patch(id, { status: 'open' })).body.code).toBe('INVALID_TRANSITION');
    // Unassigned (as a task whose assignee was never set), acknowledged goes back to open.
    await app.services.transactions.run(acme, (ctx) =>
      ctx.db.executeQuery(CompiledQuery.raw(`update tasks set assignee_id = null where id = $1`, [id])),
    );
    expect((await patch(id, { status: 'open' })).body.status).toBe('open');
  });

  it('resolve: from open, acknowledged or in_progress sets resolvedAt and resolution and publishes task.resolved; from resolved or closed it is 409', async () => {
    const { body } = await create();
    const res = await command(body.id, 'resolve', { resolution: 'not needed' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'resolved', resolution: 'not needed' });
    expect(Math.abs(Date.parse(res.body.resolvedAt) - clock.now().getTime())).toBeLessThan(5_000);
    expect(await events('task.resolved', body.id)).toEqual([{ id: body.id }]);
    const again = await command(body.id, 'resolve', { resolution: 'twice' });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('INVALID_TRANSITION');
    expect((await patch(body.id, { status: 'closed' })).status).toBe(200);
    expect((await command(body.id, 'resolve', { resolution: 'closed' })).body.code).toBe('INVALID_TRANSITION');
    expect(await events('task.resolved', body.id)).toHaveLength(1);
  });
});

describe('assign', () => {
  it('sets the assignee, moves open to acknowledged, publishes task.assigned and notifies the assignee with mail and a link to the task', async () => {
    const { body } = await create({ title: 'Call back' });
    const res = await command(body.id, 'assign', { assigneeId: worker.userId });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ assigneeId: worker.userId, status: 'acknowledged' });
    expect(await events('task.assigned', body.id)).toEqual([{ id: body.id, assigneeId: worker.userId }]);
    const inbox = await app.http(host).get('/api/v1/notification/notifications').set('Cookie', worker.cookie);
    const notice = inbox.body.items.find((n: { link: string }) => n.link === `/admin/task/tasks/${body.id}`);
    expect(notice).toMatchObject({ title: 'Task assigned to you: Call back', readAt: null });
    const requested = (
      await app.services.db.pool.query(
        `select payload from outbox where name = 'notification.email_requested' and payload->>'id' = $1`,
        [notice.id],
      )
    ).rows;
    expect(requested).toEqual([
      { payload: { id: notice.id, recipientId: worker.userId, requestedAt: expect.any(String) } },
    ]);
    // The same assignee again: nothing changes, nothing is published.
    expect((await command(body.id, 'assign', { assigneeId: worker.userId })).status).toBe(200);
    expect(await events('task.assigned', body.id)).toHaveLength(1);
  });

  it('refuses an unknown or deactivated user with 422', async () => {
    const { body } = await create();
    const unknown = await command(body.id, 'assign', { assigneeId: '00000000-0000-4000-8000-000000000000' });
    expect(unknown.status).toBe(422);
    const gone = await signInAs(app, acme, []);
    await app.services.transactions.run(acme, (ctx) =>
      ctx.db.executeQuery(CompiledQuery.raw(`update users set status = 'deactivated' where id = $1`, [gone.userId])),
    );
    const deactivated = await command(body.id, 'assign', { assigneeId: gone.userId });
    expect(deactivated.status).toBe(422);
    expect(deactivated.headers['content-type']).toMatch(/^application\/problem\+json/);
    const other = await createCustomer(app, 'tasks-other');
    const stranger = await signInAs(app, other, []);
    expect((await command(body.id, 'assign', { assigneeId: stranger.userId })).status).toBe(422);
    expect(await events('task.assigned', body.id)).toEqual([]);
  });
});

describe('SLA breach', () => {
  it('a task created with a deadline already past is breached on arrival and publishes task.sla_breached once', async () => {
    const res = await create({ deadline: past() });
    expect(res.status).toBe(201);
    expect(res.body.slaBreached).toBe(true);
    expect(await events('task.sla_breached', res.body.id)).toEqual([{ id: res.body.id }]);
    await patch(res.body.id, { title: 'touched' });
    await command(res.body.id, 'check-sla');
    expect(await events('task.sla_breached', res.body.id)).toHaveLength(1);
  });

  it('check-sla marks a passed deadline by the clock, once; moving the deadline later does not clear it', async () => {
    const { body } = await create({ deadline: new Date(clock.now().getTime() + HOUR_MS).toISOString() });
    expect((await command(body.id, 'check-sla')).body.slaBreached).toBe(false);
    clock.advance(2 * HOUR_MS);
    try {
      expect((await command(body.id, 'check-sla')).body.slaBreached).toBe(true);
      expect((await command(body.id, 'check-sla')).body.slaBreached).toBe(true);
      expect(await events('task.sla_breached', body.id)).toEqual([{ id: body.id }]);
      const later = await patch(body.id, { deadline: future() });
      expect(later.body.slaBreached).toBe(true);
    } finally {
      clock.advance(-2 * HOUR_MS);
    }
  });

  it('the update and delete hooks mark a passed deadline; a resolved task is not marked', async () => {
    const a = (await create({ deadline: new Date(clock.now().getTime() + HOUR_MS).toISOString() })).body;
    const b = (await create({ deadline: new Date(clock.now().getTime() + HOUR_MS).toISOString() })).body;
    const c = (await create({ deadline: new Date(clock.now().getTime() + HOUR_MS).toISOString() })).body;
    await command(c.id, 'resolve', { resolution: 'early' });
    clock.advance(2 * HOUR_MS);
    try {
      expect((await patch(a.id, { priority: 'low' })).body.slaBreached).toBe(true);
      expect(await events('task.sla_breached', a.id)).toHaveLength(1);
      expect((await app.http(host).delete(`${BASE}/${b.id}`).set('Cookie', manager.cookie)).status).toBe(204);
      expect(await events('task.sla_breached', b.id)).toHaveLength(1);
      expect(
        (await app.services.db.pool.query('select sla_breached from tasks where id = $1', [b.id])).rows[0].sla_breached,
      ).toBe(true);
      expect((await command(c.id, 'check-sla')).body.slaBreached).toBe(false);
      expect(await events('task.sla_breached', c.id)).toEqual([]);
    } finally {
      clock.advance(-2 * HOUR_MS);
    }
  });
});
