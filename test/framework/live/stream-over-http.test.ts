import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { request } from 'node:http';
import { CompiledQuery } from 'kysely';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../../helpers/app.ts';
import { testConfig } from '../../helpers/config.ts';
import { StreamClient, type ReceivedEvent } from '../../helpers/event-stream.ts';
import { holdStreamOpenings } from '../../helpers/stream-openings.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { EventStream } from '../../../framework/live/event-stream.ts';

/**
 * Issue 45 ("Live changes") over real HTTP: GET /api/v1/<module>/<plural>/stream answers the list's
 * changes as server-sent events, fed from the outbox after commit (the relay runs in this process,
 * the stream learns of its commits by NOTIFY), authorised at open and again at every batch.
 */
const TASKS = '/api/v1/task/tasks';
const STREAM = `${TASKS}/stream`;
const NOTIFICATIONS = '/api/v1/notification/notifications/stream';
const A = 'live-a.localhost';
const B = 'live-b.localhost';
const C = 'live-c.localhost';

let app: TestApp;
let base: string;
let tenantA: TenantRef;
let tenantB: TenantRef;
const open: StreamClient[] = [];

beforeAll(async () => {
  app = await startTestApp({
    role: 'all',
    startWorker: true,
    config: testConfig({ live: { max_streams_per_caller: 3, recheck_seconds: 1, heartbeat_seconds: 1 } }),
  });
  tenantA = await createCustomer(app, 'live-a', A);
  tenantB = await createCustomer(app, 'live-b', B);
  base = await app.web!.listen({ port: 0, host: '127.0.0.1' });
}, 60_000);

afterAll(async () => {
  for (const client of open) client.close();
  await app?.close();
});

async function follow(host: string, who: SignedIn | string, path = STREAM, headers: Record<string, string> = {}) {
  const auth: Record<string, string> =
    typeof who === 'string' ? { authorization: `Bearer ${who}` } : { cookie: who.cookie };
  const client = await StreamClient.open(base, path, { host, ...auth, ...headers });
  open.push(client);
  return client;
}

const newTask = async (host: string, by: SignedIn, title: string) => {
  const res = await app
    .http(host)
    .post(TASKS)
    .set('Cookie', by.cookie)
    .send({ title, priority: 'high', deadline: '2031-01-01T00:00:00Z' });
  expect(res.status).toBe(201);
  return res.body as { id: string; title: string };
};
const command = (host: string, by: SignedIn, id: string, name: string, body: object = {}) =>
  app.http(host).post(`${TASKS}/${id}/${name}`).set('Cookie', by.cookie).send(body);

/** The user's roles keep task:update only: they lose task:read. */
const leaveOnlyTaskUpdate = (userId: string) =>
  app.services.transactions.run(tenantA, (ctx) =>
    ctx.db.executeQuery(
      CompiledQuery.raw(
        `update roles set permissions = '{task:update}' where name = any (select unnest(roles) from users where id = $1)`,
        [userId],
      ),
    ),
  );

const data = (event: ReceivedEvent) => JSON.parse(event.data) as { id: string; row?: Record<string, unknown> };
const summary = (events: ReceivedEvent[]) => events.map((e) => [e.event, data(e).id]);

/** The events that come within `ms` (none expected): what a stream received that it should not have. */
async function quiet(client: StreamClient, ms = 1500): Promise<ReceivedEvent[]> {
  const got: ReceivedEvent[] = [];
  for (;;) {
    const event = await client.next(ms);
    if (!event) return got;
    got.push(event);
  }
}

/**
 * A client whose stream ended (`gone`) reconnects as an EventSource does, with its last id if it
 * has one, after a change committed meanwhile: it receives that change.
 */
async function resumesMissingNothing(member: SignedIn, gone: StreamClient): Promise<void> {
  // Another stream sees the change first: it has its position, before any new stream's start.
  const witness = await follow(A, member);
  const missed = await newTask(A, member, 'While reconnecting');
  expect(summary(await witness.take(1))).toEqual([['created', missed.id]]);
  const resumed = await follow(A, member, STREAM, gone.lastEventId ? { 'last-event-id': gone.lastEventId } : {});
  expect(summary(await resumed.take(1))).toEqual([['created', missed.id]]);
}

describe('a stream of a generated list', () => {
  it('answers text/event-stream with a retry hint, then created, updated and deleted in commit order, each with a growing id', async () => {
    const member = await signInAs(app, tenantA, ['task:read', 'task:update', 'task:delete']);
    const client = await follow(A, member);
    expect(client.status).toBe(200);
    expect(client.headers['content-type']).toMatch(/^text\/event-stream/);
    // Each change waits for the one before to arrive: an event shows its row as the batch reads it.
    const task = await newTask(A, member, 'Live one');
    const events = await client.take(1);
    expect((await command(A, member, task.id, 'assign', { assigneeId: member.userId })).status).toBe(200);
    events.push(...(await client.take(1)));
    expect((await command(A, member, task.id, 'resolve', { resolution: 'done' })).status).toBe(200);
    events.push(...(await client.take(1)));
    expect((await app.http(A).delete(`${TASKS}/${task.id}`).set('Cookie', member.cookie)).status).toBe(204);
    events.push(...(await client.take(1)));
    expect(client.retry).toBeGreaterThan(0);
    expect(summary(events)).toEqual([
      ['created', task.id],
      ['updated', task.id],
      ['updated', task.id],
      ['deleted', task.id],
    ]);
    const ids = events.map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    expect(new Set(ids).size).toBe(4);
    // The row as the read route answers it to this caller.
    const created = data(events[0]!).row!;
    expect(created).toMatchObject({ id: task.id, title: 'Live one', status: expect.any(String) });
    expect(data(events[1]!).row).toMatchObject({ assigneeId: member.userId, status: 'acknowledged' });
    expect(data(events[2]!).row).toMatchObject({ status: 'resolved', resolution: 'done' });
    expect(data(events[3]!)).toEqual({ id: task.id });
  });

  it('sends a heartbeat comment while nothing changes', async () => {
    const member = await signInAs(app, tenantA, ['task:read']);
    const client = await follow(A, member);
    // Until the first comment comes (heartbeat_seconds is 1 here), rather than a fixed 2.5 s.
    await vi.waitFor(() => expect(client.comments).toBeGreaterThan(0), { timeout: 5_000, interval: 50 });
  });

  it('replays what a client missed after its Last-Event-ID: exactly the changes since, on reconnect', async () => {
    const member = await signInAs(app, tenantA, ['task:read', 'task:update']);
    const first = await follow(A, member);
    await newTask(A, member, 'Before the break');
    const [seen] = await first.take(1);
    first.close();
    const one = await newTask(A, member, 'Missed one');
    const two = await newTask(A, member, 'Missed two');
    const again = await follow(A, member, STREAM, { 'last-event-id': seen!.id! });
    const replayed = await again.take(2);
    expect(summary(replayed)).toEqual([
      ['created', one.id],
      ['created', two.id],
    ]);
    expect(await quiet(again)).toEqual([]);
  });

  it('sends reset when the Last-Event-ID is past the replay window, or one the tenant never gave, then goes on from now', async () => {
    const member = await signInAs(app, tenantA, ['task:read', 'task:update']);
    const first = await follow(A, member);
    await newTask(A, member, 'Old news');
    const later = await newTask(A, member, 'Relayed long ago');
    const [seen] = await first.take(2);
    first.close();
    // The event after the client's last was relayed before the window (live.replay_minutes, 60).
    await app.services.db.pool.query(
      `update outbox set relayed_at = now() - interval '2 hours' where tenant_id = $1 and position = $2`,
      [tenantA.id, Number(seen!.id) + 1],
    );
    const stale = await follow(A, member, STREAM, { 'last-event-id': seen!.id! });
    const [reset] = await stale.take(1);
    expect(reset!.event).toBe('reset');
    expect(Number(reset!.id)).toBeGreaterThan(Number(seen!.id));
    expect(summary(await quiet(stale, 800)).filter(([, id]) => id === later.id)).toEqual([]);
    const now = await newTask(A, member, 'After the reset');
    expect(summary(await stale.take(1))).toEqual([['created', now.id]]);

    const unknown = await follow(A, member, STREAM, { 'last-event-id': '999999999' });
    expect((await unknown.take(1))[0]!.event).toBe('reset');
  });

  it('opens with its start position as an id: a client that saw no event resumes on another process after a shutdown, missing nothing', async () => {
    const member = await signInAs(app, tenantA, ['task:read', 'task:update']);
    const other = await startTestApp({ databaseUrl: app.databaseUrl, role: 'web', config: app.config });
    let closed = false;
    let gone: StreamClient | undefined;
    try {
      const otherBase = await other.web!.listen({ port: 0, host: '127.0.0.1' });
      const client = await StreamClient.open(otherBase, STREAM, { host: A, cookie: member.cookie });
      open.push(client);
      gone = client;
      expect(client.status).toBe(200);
      await vi.waitFor(() => expect((other.services.live as unknown as { openStreams: number }).openStreams).toBe(1));
      await other.close();
      closed = true;
      // Ended without an end event: the client is to reconnect, as an EventSource does, elsewhere.
      expect(await client.waitEnd(5000)).toBe(true);
    } finally {
      if (!closed) await other.close();
    }
    await resumesMissingNothing(member, gone!);
  });

  it('ends cleanly a stream whose opening was under way when its process began to shut down: it resumes elsewhere', async () => {
    const member = await signInAs(app, tenantA, ['task:read', 'task:update']);
    const other = await startTestApp({ databaseUrl: app.databaseUrl, role: 'web', config: app.config });
    const otherBase = await other.web!.listen({ port: 0, host: '127.0.0.1' });
    // The opening is held up while the process begins to close.
    const held = await holdStreamOpenings(app.databaseUrl);
    let closing: Promise<void> | undefined;
    let client: StreamClient;
    try {
      const opening = StreamClient.open(otherBase, STREAM, { host: A, cookie: member.cookie });
      await vi.waitFor(async () => expect(await held.waiting()).toBe(1), { timeout: 5_000, interval: 20 });
      closing = other.close();
      // The hub has stopped (the server's preClose) before the opening goes on.
      await new Promise((r) => setTimeout(r, 200));
      await held.release();
      client = await opening;
      open.push(client);
    } finally {
      await held.release();
    }
    expect(client.status).toBe(200);
    // Ended without an end event, as every stream of a process that shuts down: the client reconnects.
    expect(await client.waitEnd(5000)).toBe(true);
    expect(await client.next(100)).toBeUndefined();
    await closing;
    await resumesMissingNothing(member, client);
  });

  it('refuses a malformed Last-Event-ID with 422 VALIDATION_FAILED', async () => {
    const member = await signInAs(app, tenantA, ['task:read']);
    const client = await follow(A, member, STREAM, { 'last-event-id': 'yesterday' });
    expect(client.status).toBe(422);
    expect(client.problem?.code).toBe('VALIDATION_FAILED');
  });
});

describe('authorised at open and at every batch', () => {
  it('refuses a caller without a session (401) or without the list permission (403)', async () => {
    const anonymous = await StreamClient.open(base, STREAM, { host: A });
    open.push(anonymous);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers['content-type']).toMatch(/^application\/problem\+json/);
    const reader = await signInAs(app, tenantA, ['content:read']);
    const forbidden = await follow(A, reader);
    expect(forbidden.status).toBe(403);
    expect(forbidden.problem?.code).toBe('AUTH_FORBIDDEN');
  });

  it('ends with event: end when the member loses task:read mid-stream, at the next change', async () => {
    const member = await signInAs(app, tenantA, ['task:read', 'task:update']);
    const other = await signInAs(app, tenantA, ['task:read', 'task:update']);
    const client = await follow(A, member);
    await leaveOnlyTaskUpdate(member.userId);
    const after = await newTask(A, other, 'Not for the member any more');
    const events = await client.take(1);
    expect(events[0]!.event).toBe('end');
    expect(JSON.parse(events[0]!.data)).toEqual({ reason: 'AUTH_FORBIDDEN' });
    expect(await client.waitEnd()).toBe(true);
    expect(after.id).toBeDefined();
  });

  it("re-reads each caller's roles per batch: one user's session and token end together, another user's stream goes on", async () => {
    // The batch reads each user's roles once for all their sessions and tokens: a user's loss must
    // end every stream of theirs, and only theirs.
    const member = await signInAs(app, tenantA, ['task:read', 'task:update']);
    const other = await signInAs(app, tenantA, ['task:read', 'task:update']);
    const made = await app
      .http(A)
      .post('/api/v1/auth/tokens')
      .set('Cookie', member.cookie)
      .send({ name: 'live-both', permissions: ['task:read'], expiresInDays: 1 });
    expect(made.status).toBe(201);
    const bySession = await follow(A, member);
    const byToken = await follow(A, made.body.token as string);
    const others = await follow(A, other);
    const before = await newTask(A, other, 'Seen by all three');
    for (const client of [bySession, byToken, others])
      expect(summary(await client.take(1))).toEqual([['created', before.id]]);
    await leaveOnlyTaskUpdate(member.userId);
    const after = await newTask(A, other, 'Seen by the other user only');
    for (const client of [bySession, byToken]) {
      const [end] = await client.take(1);
      expect(end!.event).toBe('end');
      expect(JSON.parse(end!.data)).toEqual({ reason: 'AUTH_FORBIDDEN' });
    }
    expect(summary(await others.take(1))).toEqual([['created', after.id]]);
  });

  it('ends within the recheck interval when the caller signs out, with nothing changing', async () => {
    const member = await signInAs(app, tenantA, ['task:read']);
    const client = await follow(A, member);
    await app.services.transactions.run(tenantA, (ctx) =>
      ctx.db.executeQuery(CompiledQuery.raw('delete from sessions where user_id = $1', [member.userId])),
    );
    const [end] = await client.take(1, 4000);
    expect(end!.event).toBe('end');
    expect(JSON.parse(end!.data)).toEqual({ reason: 'AUTH_REQUIRED' });
  });

  it('closes when its tenant is suspended; the reconnect is answered as the list, 404 NO_SITE', async () => {
    const host = 'live-suspended.localhost';
    const tenant = await createCustomer(app, 'live-suspended', host);
    const member = await signInAs(app, tenant, ['task:read']);
    const client = await follow(host, member);
    expect(client.status).toBe(200);
    const operator = await signInAs(app, app.operator, ['tenant:manage']);
    const suspended = await app
      .http()
      .post(`/api/v1/tenant/tenants/${tenant.id}/suspend`)
      .set('Cookie', operator.cookie);
    expect(suspended.status).toBe(200);
    // Nothing changes in the tenant: the recheck (1 s here) finds it suspended.
    expect(await client.waitEnd(4000)).toBe(true);
    // Closed as at a shutdown, not ended: `end` would tell the client not to reconnect.
    expect(await client.next(200)).toBeUndefined();
    const again = await StreamClient.open(base, STREAM, { host, cookie: member.cookie });
    open.push(again);
    expect(again.status).toBe(404);
    expect(again.problem?.code).toBe('NO_SITE');
  });

  it('ends when the user is deactivated', async () => {
    const member = await signInAs(app, tenantA, ['task:read']);
    const client = await follow(A, member);
    await app.services.transactions.run(tenantA, (ctx) =>
      ctx.db.executeQuery(CompiledQuery.raw(`update users set status = 'deactivated' where id = $1`, [member.userId])),
    );
    const [end] = await client.take(1, 4000);
    expect(end!.event).toBe('end');
  });

  it('follows with a personal access token, and ends when the token is revoked', async () => {
    const member = await signInAs(app, tenantA, ['task:read', 'task:update']);
    const made = await app
      .http(A)
      .post('/api/v1/auth/tokens')
      .set('Cookie', member.cookie)
      .send({
        name: 'live',
        permissions: ['task:read'],
        expiresInDays: 1,
      });
    expect(made.status).toBe(201);
    const client = await follow(A, made.body.token as string);
    expect(client.status).toBe(200);
    const task = await newTask(A, member, 'Seen by the token');
    expect(summary(await client.take(1))).toEqual([['created', task.id]]);
    expect((await app.http(A).delete(`/api/v1/auth/tokens/${made.body.id}`).set('Cookie', member.cookie)).status).toBe(
      204,
    );
    const [end] = await client.take(1, 4000);
    expect(end!.event).toBe('end');
    expect(JSON.parse(end!.data)).toEqual({ reason: 'AUTH_REQUIRED' });
  });

  it('refuses a caller past live.max_streams_per_caller with 429 RATE_LIMITED and Retry-After', async () => {
    const member = await signInAs(app, tenantA, ['task:read']);
    for (let i = 0; i < 3; i++) expect((await follow(A, member)).status).toBe(200);
    const refused = await follow(A, member);
    expect(refused.status).toBe(429);
    expect(refused.problem?.code).toBe('RATE_LIMITED');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // Another caller is not held to this one's count.
    expect((await follow(A, await signInAs(app, tenantA, ['task:read']))).status).toBe(200);
  });

  it('gives the place back of a client that leaves while its stream is opening: the caller can still open as many', async () => {
    const member = await signInAs(app, tenantA, ['task:read']);
    // Each opening is held up until its client has gone.
    const held = await holdStreamOpenings(app.databaseUrl);
    try {
      const { hostname, port } = new URL(base);
      for (let i = 0; i < 3; i++) {
        const req = request({
          hostname,
          port,
          path: STREAM,
          agent: false,
          headers: { host: A, cookie: member.cookie, accept: 'text/event-stream' },
        });
        req.on('error', () => {});
        req.end();
        await vi.waitFor(async () => expect(await held.waiting()).toBe(i + 1), { timeout: 5_000, interval: 20 });
        req.destroy();
      }
      // The server has seen the three clients leave before their openings go on.
      await new Promise((r) => setTimeout(r, 200));
    } finally {
      await held.release();
    }
    const opened = () =>
      vi.waitFor(
        async () => {
          const client = await follow(A, member);
          expect(client.status).toBe(200);
        },
        { timeout: 3_000, interval: 100 },
      );
    for (let i = 0; i < 3; i++) await opened();
    expect((await follow(A, member)).status).toBe(429);
  });
});

describe('who sees which row', () => {
  it("never shows tenant A's task on tenant B's stream (row-level security holds the batch to its tenant)", async () => {
    const inA = await signInAs(app, tenantA, ['task:read', 'task:update']);
    const inB = await signInAs(app, tenantB, ['task:read', 'task:update']);
    const streamB = await follow(B, inB);
    const streamA = await follow(A, inA);
    const hidden = await newTask(A, inA, 'Only in A');
    expect(summary(await streamA.take(1))).toEqual([['created', hidden.id]]);
    const own = await newTask(B, inB, 'Only in B');
    expect(summary(await streamB.take(1))).toEqual([['created', own.id]]);
    expect(await quiet(streamB, 800)).toEqual([]);
  });

  it("shows a person their own notifications only: the assignee's stream gets it, another member's does not", async () => {
    const manager = await signInAs(app, tenantA, ['task:read', 'task:update']);
    const assignee = await signInAs(app, tenantA, ['task:read']);
    const bystander = await signInAs(app, tenantA, ['task:read']);
    const mine = await follow(A, assignee, NOTIFICATIONS);
    const theirs = await follow(A, bystander, NOTIFICATIONS);
    expect(mine.status).toBe(200);
    const task = await newTask(A, manager, 'For the assignee');
    expect((await command(A, manager, task.id, 'assign', { assigneeId: assignee.userId })).status).toBe(200);
    const [created] = await mine.take(1);
    expect(created!.event).toBe('created');
    const row = data(created!).row!;
    expect(row).toMatchObject({ readAt: null, link: expect.stringContaining(task.id) });
    expect(await quiet(theirs, 800)).toEqual([]);
    // Marked read: updated, to its owner.
    expect(
      (await app.http(A).post(`/api/v1/notification/notifications/${row.id}/read`).set('Cookie', assignee.cookie))
        .status,
    ).toBe(200);
    const [read] = await mine.take(1);
    expect(read!.event).toBe('updated');
    expect(data(read!).row!.readAt).toEqual(expect.any(String));
  });
});

describe('what a batch writes (the cost of many streams, issue 45 point 9)', () => {
  it('writes three streams of one shape the same Buffer, once per batch with every event of the batch, and starts no timer per stream', async () => {
    // A tenant of its own: no stream of another test shares its batches.
    const tenantC = await createCustomer(app, 'live-c', C);
    const member = await signInAs(app, tenantC, ['task:read', 'task:update']);
    // Timers started by the live code while streams open, receive a batch and beat: the heartbeat
    // is the hub's one interval, started with the process, never one per stream.
    // Started by the live code itself (its frame calls the timer), not by the pool or fastify under it.
    const fromLive = () =>
      (new Error().stack ?? '')
        .split('\n')
        .slice(1)
        .find((frame) => !frame.includes('stream-over-http.test.ts') && !frame.includes('node_modules'))
        ?.includes('/framework/live/') ?? false;
    const timers = { setTimeout: 0, setInterval: 0 };
    const realTimeout = globalThis.setTimeout;
    const realInterval = globalThis.setInterval;
    const timeoutSpy = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((
      ...args: Parameters<typeof setTimeout>
    ) => {
      if (fromLive()) timers.setTimeout++;
      return realTimeout(...args);
    }) as typeof setTimeout);
    const intervalSpy = vi.spyOn(globalThis, 'setInterval').mockImplementation(((
      ...args: Parameters<typeof setInterval>
    ) => {
      if (fromLive()) timers.setInterval++;
      return realInterval(...args);
    }) as typeof setInterval);
    const sends = vi.spyOn(EventStream.prototype, 'send');
    try {
      const clients = [await follow(C, member), await follow(C, member), await follow(C, member)];
      for (const client of clients) expect(client.status).toBe(200);
      // Three creates in one transaction: one relay commit, so one batch reads all three.
      const made = await app
        .http(C)
        .post('/api/v1/batch')
        .set('Cookie', member.cookie)
        .send({
          requests: ['One', 'Two', 'Three'].map((title) => ({
            method: 'POST',
            path: TASKS,
            body: { title, priority: 'high', deadline: '2031-01-01T00:00:00Z' },
          })),
        });
      expect(made.status).toBe(200);
      for (const client of clients)
        expect((await client.take(3)).map((e) => [e.event, JSON.parse(e.data).row.title])).toEqual([
          ['created', 'One'],
          ['created', 'Two'],
          ['created', 'Three'],
        ]);
      // One write per stream, the same Buffer for the three: serialized and written out once.
      const chunks = sends.mock.calls.map(([chunk]) => chunk);
      expect(chunks).toHaveLength(3);
      expect(new Set(sends.mock.contexts).size).toBe(3);
      expect(chunks[1]).toBe(chunks[0]);
      expect(chunks[2]).toBe(chunks[0]);
      // The heartbeat (every second here) reaches each of them meanwhile.
      await new Promise((r) => realTimeout(r, 1500));
      for (const client of clients) expect(client.comments).toBeGreaterThan(0);
      expect(timers).toEqual({ setTimeout: 0, setInterval: 0 });
    } finally {
      sends.mockRestore();
      timeoutSpy.mockRestore();
      intervalSpy.mockRestore();
    }
  });
});
