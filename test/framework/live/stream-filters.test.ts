import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type pg from 'pg';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../../helpers/app.ts';
import { testConfig } from '../../helpers/config.ts';
import { StreamClient, type ReceivedEvent } from '../../helpers/event-stream.ts';
import { holdStreamOpenings } from '../../helpers/stream-openings.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';

/**
 * Issue 45, point 1: a stream takes its list's filters and fields, read by the list's own parser
 * and compiler (framework/query/). A row that no longer matches after an update is sent as
 * removed; a filter the list refuses is refused before the stream starts; and the filters are
 * evaluated inside the one statement a batch costs per tenant, however many streams hold them.
 */
const TASKS = '/api/v1/task/tasks';
const HOST = 'filters.localhost';

let app: TestApp;
let base: string;
let tenant: TenantRef;
const open: StreamClient[] = [];

/** The batch statements PostgreSQL was sent (their text), in order: the tenant's batches, one each. */
const batchStatements: string[] = [];
function watchBatches(pool: pg.Pool): void {
  const watched = new WeakSet<pg.PoolClient>();
  pool.on('acquire', (client) => {
    if (watched.has(client)) return;
    watched.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const config = args[0] as string | { text: string };
      const text = typeof config === 'string' ? config : config.text;
      if (text.includes('changes as materialized')) batchStatements.push(text);
      return query(...args);
    };
  });
}

beforeAll(async () => {
  // Six different filters per tenant: the tests below hold at most five open at once in each tenant
  // but the one that reaches the limit.
  app = await startTestApp({
    role: 'all',
    startWorker: true,
    config: testConfig({ live: { recheck_seconds: 30, max_filters_per_tenant: 6 } }),
  });
  tenant = await createCustomer(app, 'filters', HOST);
  base = await app.web!.listen({ port: 0, host: '127.0.0.1' });
  watchBatches(app.services.db.pool);
}, 60_000);

afterAll(async () => {
  for (const client of open) client.close();
  await app?.close();
});

async function follow(who: SignedIn, path: string, host = HOST) {
  const client = await StreamClient.open(base, path, { host, cookie: who.cookie });
  open.push(client);
  return client;
}

const newTask = async (by: SignedIn, title: string, priority = 'high', host = HOST) => {
  const res = await app
    .http(host)
    .post(TASKS)
    .set('Cookie', by.cookie)
    .send({ title, priority, deadline: '2031-01-01T00:00:00Z' });
  expect(res.status).toBe(201);
  return res.body as { id: string };
};
const command = async (by: SignedIn, id: string, name: string, body: object) =>
  expect((await app.http(HOST).post(`${TASKS}/${id}/${name}`).set('Cookie', by.cookie).send(body)).status).toBe(200);

const data = (event: ReceivedEvent) => JSON.parse(event.data) as { id: string; row?: Record<string, unknown> };
const summary = (events: ReceivedEvent[]) => events.map((e) => [e.event, data(e).id]);

/** What a stream received within `ms` that it should not have. */
async function quiet(client: StreamClient, ms = 1000): Promise<ReceivedEvent[]> {
  const got: ReceivedEvent[] = [];
  for (let event = await client.next(ms); event; event = await client.next(ms)) got.push(event);
  return got;
}

describe("a stream with the list's filters", () => {
  it('sees a create, an assign as updated and a resolve as removed, in order, on status=not.in.(resolved,closed)', async () => {
    const member = await signInAs(app, tenant, ['task:read', 'task:update']);
    const open_ = await follow(member, `${TASKS}/stream?status=not.in.(resolved,closed)`);
    const every = await follow(member, `${TASKS}/stream`);
    expect(open_.status).toBe(200);
    const task = await newTask(member, 'Filtered');
    const events = await open_.take(1);
    await command(member, task.id, 'assign', { assigneeId: member.userId });
    events.push(...(await open_.take(1)));
    await command(member, task.id, 'resolve', { resolution: 'done' });
    events.push(...(await open_.take(1)));
    expect(summary(events)).toEqual([
      ['created', task.id],
      ['updated', task.id],
      ['removed', task.id],
    ]);
    expect(data(events[1]!).row).toMatchObject({ assigneeId: member.userId, status: 'acknowledged' });
    expect(data(events[2]!)).toEqual({ id: task.id });
    const ids = events.map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    // The stream without filters, fed by the same batches, sees the resolve as an update.
    expect(summary(await every.take(3))).toEqual([
      ['created', task.id],
      ['updated', task.id],
      ['updated', task.id],
    ]);
  });

  it('sends nothing for a created row the filters leave out, and takes or groups as the list does', async () => {
    const member = await signInAs(app, tenant, ['task:read', 'task:update']);
    const low = await follow(member, `${TASKS}/stream?priority=eq.low`);
    const either = await follow(member, `${TASKS}/stream?or=(priority.eq.low,title.startsWith.wanted)`);
    await newTask(member, 'Not low', 'high');
    const lowOne = await newTask(member, 'Low one', 'low');
    const wanted = await newTask(member, 'Wanted high', 'high');
    expect(summary(await low.take(1))).toEqual([['created', lowOne.id]]);
    expect(await quiet(low)).toEqual([]);
    expect(summary(await either.take(2))).toEqual([
      ['created', lowOne.id],
      ['created', wanted.id],
    ]);
  });

  it('filters through a reference as the list does (assignee.email), with the caller holding user:read', async () => {
    const manager = await signInAs(app, tenant, ['task:read', 'task:update', 'user:read']);
    const assignee = await signInAs(app, tenant, ['task:read']);
    const other = await signInAs(app, tenant, ['task:read']);
    const client = await follow(manager, `${TASKS}/stream?assignee.email=eq.${encodeURIComponent(assignee.email)}`);
    expect(client.status).toBe(200);
    // Each change waits for the one before to be delivered: an event shows its row as the batch reads it.
    const task = await newTask(manager, 'Through the reference');
    expect(await quiet(client, 700)).toEqual([]);
    await command(manager, task.id, 'assign', { assigneeId: assignee.userId });
    expect(summary(await client.take(1))).toEqual([['updated', task.id]]);
    await command(manager, task.id, 'assign', { assigneeId: other.userId });
    expect(summary(await client.take(1))).toEqual([['removed', task.id]]);
  });

  it('sends only the fields fields= names (id always)', async () => {
    const member = await signInAs(app, tenant, ['task:read', 'task:update']);
    const client = await follow(member, `${TASKS}/stream?fields=title,status`);
    const task = await newTask(member, 'Few fields');
    const [created] = await client.take(1);
    expect(data(created!).row).toEqual({ id: task.id, title: 'Few fields', status: 'open' });
  });

  it('evaluates every stream filter inside the one statement of the batch, once per distinct filter', async () => {
    // A tenant of its own: the batch serves every open stream of the tenant.
    const host = 'one-batch.localhost';
    const own = await createCustomer(app, 'one-batch', host);
    const member = await signInAs(app, own, ['task:read', 'task:update']);
    const streams = [];
    for (const filter of [
      'priority=eq.low',
      'priority=eq.high',
      'title=contains.batch',
      'status=eq.open',
      'status=eq.open',
    ])
      streams.push(await follow(member, `${TASKS}/stream?${filter}`, host));
    // Every stream has had its first batch: from here on, one batch per change.
    await new Promise((r) => setTimeout(r, 500));
    batchStatements.length = 0;
    const task = await newTask(member, 'One batch', 'high', host);
    for (const stream of streams.slice(1)) expect(summary(await stream.take(1))).toEqual([['created', task.id]]);
    expect(await quiet(streams[0]!, 500)).toEqual([]);
    expect(batchStatements).toHaveLength(1);
    // The four distinct filters are conditions of that statement, each once (two streams share one).
    expect(batchStatements[0]!.match(/coalesce\(\(/g)).toHaveLength(4);
  });

  it("filters the caller's notifications: readAt=is.null sees one arrive, and its marking read as removed", async () => {
    const manager = await signInAs(app, tenant, ['task:read', 'task:update']);
    const assignee = await signInAs(app, tenant, ['task:read']);
    const unread = await follow(assignee, '/api/v1/notification/notifications/stream?readAt=is.null');
    expect(unread.status).toBe(200);
    const task = await newTask(manager, 'For the badge');
    await command(manager, task.id, 'assign', { assigneeId: assignee.userId });
    const [arrived] = await unread.take(1);
    expect(arrived!.event).toBe('created');
    const id = data(arrived!).id;
    const read = await app
      .http(HOST)
      .post(`/api/v1/notification/notifications/${id}/read`)
      .set('Cookie', assignee.cookie);
    expect(read.status).toBe(200);
    expect(summary(await unread.take(1))).toEqual([['removed', id]]);
  });
});

describe('refused before the stream starts', () => {
  it.each([
    ['an operator the field does not take', 'status=gt.open,closed', 'status'],
    ['a value the enum does not hold', 'status=eq.sleeping', 'status'],
    ['a field the list is not filtered by', 'colour=eq.red', 'colour'],
    ['a malformed or group', 'or=(status.eq.open', 'or'],
    ['a field fields= does not know', 'fields=title,colour', 'fields'],
    ['a paging parameter (a stream has no pages)', 'limit=5', 'limit'],
  ])('422 VALIDATION_FAILED for %s', async (_, query, parameter) => {
    const member = await signInAs(app, tenant, ['task:read']);
    const client = await follow(member, `${TASKS}/stream?${query}`);
    expect(client.status).toBe(422);
    expect(client.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(client.problem?.code).toBe('VALIDATION_FAILED');
    expect(JSON.stringify(client.problem)).toContain(parameter);
  });

  it('429 RATE_LIMITED with Retry-After past live.max_filters_per_tenant different filters, while a held one still opens', async () => {
    const host = 'many-filters.localhost';
    const own = await createCustomer(app, 'many-filters', host);
    const members = [await signInAs(app, own, ['task:read']), await signInAs(app, own, ['task:read'])];
    for (let i = 0; i < 6; i++) {
      const client = await follow(members[i % 2]!, `${TASKS}/stream?title=contains.t${i}`, host);
      expect(client.status).toBe(200);
    }
    // The batches know the streams once their opening has committed.
    await new Promise((r) => setTimeout(r, 300));
    const refused = await follow(members[0]!, `${TASKS}/stream?title=contains.t6`, host);
    expect(refused.status).toBe(429);
    expect(refused.problem?.code).toBe('RATE_LIMITED');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect((await follow(members[1]!, `${TASKS}/stream?title=contains.t0`, host)).status).toBe(200);
    // Without a filter nothing is evaluated: always admitted.
    expect((await follow(members[1]!, `${TASKS}/stream`, host)).status).toBe(200);
  });

  it('counts the filters of the streams still opening: three new filters opening at once with room for two, one is 429', async () => {
    const host = 'filters-at-once.localhost';
    const own = await createCustomer(app, 'filters-at-once', host);
    const members = [await signInAs(app, own, ['task:read']), await signInAs(app, own, ['task:read'])];
    for (let i = 0; i < 4; i++)
      expect((await follow(members[i % 2]!, `${TASKS}/stream?title=contains.before-${i}`, host)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    // Each opening is held up after its places are taken, before it commits and joins the tenant's streams.
    const held = await holdStreamOpenings(app.databaseUrl);
    let answers: StreamClient[];
    try {
      const openings = [0, 1, 2].map((i) =>
        StreamClient.open(base, `${TASKS}/stream?title=contains.at-once-${i}`, {
          host,
          cookie: members[i % 2]!.cookie,
        }),
      );
      // Two are admitted and wait; the third, past live.max_filters_per_tenant (6), is refused.
      await vi.waitFor(async () => expect(await held.waiting()).toBeGreaterThanOrEqual(2), { timeout: 5_000 });
      await new Promise((r) => setTimeout(r, 300));
      await held.release();
      answers = await Promise.all(openings);
      open.push(...answers);
    } finally {
      await held.release();
    }
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 429]);
    expect(answers.find((a) => a.status === 429)!.problem?.code).toBe('RATE_LIMITED');
  });

  it('403 AUTH_FORBIDDEN for a filter through a reference the caller may not read', async () => {
    const member = await signInAs(app, tenant, ['task:read']);
    const client = await follow(member, `${TASKS}/stream?assignee.displayName=contains.a`);
    expect(client.status).toBe(403);
    expect(client.problem?.code).toBe('AUTH_FORBIDDEN');
  });
});
