import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import { StreamClient, type ReceivedEvent } from '../helpers/event-stream.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { MAX_LISTS } from '../../framework/admin/live.ts';
import { SHELL_FILES } from '../../framework/admin/assets.ts';

/**
 * Issue 45 point 7, over real HTTP: an admin page follows its lists on one connection,
 * GET /admin/_live/stream?lists=<stream operation ids> (framework/admin/live.ts): each list's events
 * named `<operation id>:<event>`, each list admitted by its own stream route's guard, the
 * connection one stream of the caller's live.max_streams_per_caller. The browser side is
 * test/browser/admin-live.test.ts.
 */
const HOST = 'live-page.localhost';
const TASKS = 'task-task-stream';
const NOTIFICATIONS = 'notification-notification-stream';
const PAGE_STREAM = `/admin/_live/stream?lists=${TASKS},${NOTIFICATIONS}`;
const PER_CALLER = 2;

let app: TestApp;
let base: string;
let tenant: TenantRef;
const open: StreamClient[] = [];

beforeAll(async () => {
  app = await startTestApp({
    role: 'all',
    startWorker: true,
    config: testConfig({ live: { max_streams_per_caller: PER_CALLER, recheck_seconds: 1, heartbeat_seconds: 1 } }),
  });
  tenant = await createCustomer(app, 'live-page', HOST);
  base = await app.web!.listen({ port: 0, host: '127.0.0.1' });
}, 60_000);

afterAll(async () => {
  for (const client of open) client.close();
  await app?.close();
});

async function follow(who: SignedIn, path = PAGE_STREAM, headers: Record<string, string> = {}) {
  const client = await StreamClient.open(base, path, { host: HOST, cookie: who.cookie, ...headers });
  open.push(client);
  return client;
}

const newTask = async (by: SignedIn, title: string) => {
  const res = await app
    .http(HOST)
    .post('/api/v1/task/tasks')
    .set('Cookie', by.cookie)
    .send({ title, priority: 'high', deadline: '2031-01-01T00:00:00Z' });
  expect(res.status).toBe(201);
  return res.body as { id: string };
};

const assign = async (by: SignedIn, id: string, to: SignedIn) => {
  const res = await app
    .http(HOST)
    .post(`/api/v1/task/tasks/${id}/assign`)
    .set('Cookie', by.cookie)
    .send({ assigneeId: to.userId });
  expect(res.status).toBe(200);
};

const named = (events: ReceivedEvent[]) => events.map((e) => [e.event, (JSON.parse(e.data) as { id: string }).id]);
/** Events of one commit, in the order of their names (one commit's events of two lists may come in either). */
const byName = (events: ReceivedEvent[]) => named(events).sort(([a], [b]) => a!.localeCompare(b!));

/** The events that come within `ms` (none expected). */
async function quiet(client: StreamClient, ms = 1500): Promise<ReceivedEvent[]> {
  const got: ReceivedEvent[] = [];
  for (;;) {
    const event = await client.next(ms);
    if (!event) return got;
    got.push(event);
  }
}

/** Waits until the stream has joined its tenant's (after its transaction committed), so a change after it is followed. */
const joined = (count: number) => expect.poll(() => app.services.live.openStreams, { timeout: 5000 }).toBe(count);

describe("an admin page's one stream", () => {
  it("carries the list's changes and the caller's own notifications, each named by its list, in commit order", async () => {
    const reader = await signInAs(app, tenant, ['task:read', 'task:update']);
    const other = await signInAs(app, tenant, ['task:read', 'task:update']);
    const before = app.services.live.openStreams;
    const page = await follow(reader);
    const othersPage = await follow(other);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/event-stream/);
    await joined(before + 2);

    const task = await newTask(other, 'Made while the page is open');
    await assign(other, task.id, reader);
    const events = await page.take(3);
    expect(named(events.slice(0, 1))).toEqual([[`${TASKS}:created`, task.id]]);
    // The assignment changes the task and notifies its new assignee, in one commit after it.
    expect(byName(events.slice(1))).toEqual([
      [`${NOTIFICATIONS}:created`, expect.any(String)],
      [`${TASKS}:updated`, task.id],
    ]);
    const [created, ...assigned] = events.map((e) => Number(e.id));
    for (const id of assigned) expect(id).toBeGreaterThan(created!);
    // The notification is the reader's: the other person's page sees the task, never it.
    expect(named(await othersPage.take(2)).map(([event]) => event)).toEqual([`${TASKS}:created`, `${TASKS}:updated`]);
    expect(await quiet(othersPage)).toEqual([]);
  });

  it('sends the events of one batch of changes across its lists in commit order: positions never go back', async () => {
    const reader = await signInAs(app, tenant, ['task:read', 'task:create', 'task:update']);
    const before = app.services.live.openStreams;
    const page = await follow(reader);
    await joined(before + 1);
    // One commit: a task, its assignment to the reader (the task updated, a notification made), a
    // second task. The hub reads them in one batch; the two lists' events must interleave by position.
    const task = { title: 'Batched', priority: 'high', deadline: '2031-01-01T00:00:00Z' };
    const res = await app
      .http(HOST)
      .post('/api/v1/batch')
      .set('Cookie', reader.cookie)
      .send({
        requests: [
          { method: 'POST', path: '/api/v1/task/tasks', body: task },
          { method: 'POST', path: '/api/v1/task/tasks', body: { ...task, title: 'Batched too' } },
        ],
      });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const [first, second] = (res.body.results as { body: { id: string } }[]).map((r) => r.body.id);
    const more = await app
      .http(HOST)
      .post('/api/v1/batch')
      .set('Cookie', reader.cookie)
      .send({
        requests: [
          { method: 'POST', path: `/api/v1/task/tasks/${first}/assign`, body: { assigneeId: reader.userId } },
          { method: 'PATCH', path: `/api/v1/task/tasks/${second}`, body: { title: 'Batched, renamed' } },
        ],
      });
    expect(more.status, JSON.stringify(more.body)).toBe(200);
    const events = await page.take(5);
    expect(events.map((e) => e.event).sort()).toEqual([
      `${NOTIFICATIONS}:created`,
      `${TASKS}:created`,
      `${TASKS}:created`,
      `${TASKS}:updated`,
      `${TASKS}:updated`,
    ]);
    const positions = events.map((e) => Number(e.id));
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
  });

  it('resumes with Last-Event-ID: the changes after it, of every list on the connection', async () => {
    const reader = await signInAs(app, tenant, ['task:read', 'task:update']);
    const before = app.services.live.openStreams;
    const first = await follow(reader);
    await joined(before + 1);
    const task = await newTask(reader, 'Seen before the reconnect');
    const [created] = await first.take(1);
    first.close();
    const missed = await newTask(reader, 'Made while away');
    await assign(reader, missed.id, reader);
    const again = await follow(reader, PAGE_STREAM, { 'last-event-id': created!.id! });
    const replayed = await again.take(3);
    expect(named(replayed.slice(0, 1))).toEqual([[`${TASKS}:created`, missed.id]]);
    expect(byName(replayed.slice(1))).toEqual([
      [`${NOTIFICATIONS}:created`, expect.any(String)],
      [`${TASKS}:updated`, missed.id],
    ]);
    expect(await quiet(again)).toEqual([]);
    expect(task.id).not.toBe(missed.id);
  });

  it('opens with its start position, so a client that saw no event yet resumes from there; a list named fresh starts now, the others resume', async () => {
    const reader = await signInAs(app, tenant, ['task:read', 'task:update']);
    const before = app.services.live.openStreams;
    // The badge's list alone, as a tab on the dashboard asks it.
    const first = await follow(reader, `/admin/_live/stream?lists=${NOTIFICATIONS}`);
    await joined(before + 1);
    await first.next(300);
    expect(first.lastEventId).toMatch(/^[0-9]+$/);
    const start = first.lastEventId!;
    first.close();
    await joined(before);
    // While no connection of the page is open: a task, and the reader's notification of its
    // assignment (an observer sees them relayed, so they have their positions).
    const observer = await follow(reader);
    await joined(before + 1);
    const missed = await newTask(reader, 'Made before the list page was open');
    await assign(reader, missed.id, reader);
    await observer.take(3);
    observer.close();
    await joined(before);
    // A task list page opened meanwhile: its list is new to the connection, the badge's is not.
    const again = await follow(reader, `${PAGE_STREAM}&fresh=${TASKS}`, { 'last-event-id': start });
    const replayed = await again.take(1);
    expect(named(replayed)).toEqual([[`${NOTIFICATIONS}:created`, expect.any(String)]]);
    expect(await quiet(again)).toEqual([]);
    // Without fresh, the task list's changes after that position come too.
    const whole = await follow(reader, PAGE_STREAM, { 'last-event-id': start });
    expect(byName(await whole.take(3))).toEqual([
      [`${NOTIFICATIONS}:created`, expect.any(String)],
      [`${TASKS}:created`, missed.id],
      [`${TASKS}:updated`, missed.id],
    ]);
    const notFollowed = await app
      .http(HOST)
      .get(`/admin/_live/stream?lists=${NOTIFICATIONS}&fresh=${TASKS}`)
      .set('Cookie', reader.cookie);
    expect(notFollowed.status).toBe(422);
  });

  it('counts once against live.max_streams_per_caller, however many lists it carries: the next is 429 with Retry-After', async () => {
    const reader = await signInAs(app, tenant, ['task:read']);
    const before = app.services.live.openStreams;
    for (let i = 0; i < PER_CALLER; i++) expect((await follow(reader)).status).toBe(200);
    await joined(before + PER_CALLER);
    const refused = await app.http(HOST).get(PAGE_STREAM).set('Cookie', reader.cookie);
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toMatch(/^[0-9]+$/);
    expect(refused.text).toContain('data-code="RATE_LIMITED"');
  });

  it('admits each list by its own stream route: a list the caller may not read is 403, an unknown one 422, before the stream starts', async () => {
    const noTasks = await signInAs(app, tenant, ['user:read']);
    const forbidden = await app.http(HOST).get(PAGE_STREAM).set('Cookie', noTasks.cookie);
    expect(forbidden.status).toBe(403);
    expect(forbidden.text).toContain('data-code="AUTH_FORBIDDEN"');
    // Its own notifications alone: any signed-in caller may follow them.
    const own = await follow(noTasks, `/admin/_live/stream?lists=${NOTIFICATIONS}`);
    expect(own.status).toBe(200);
    const unknown = await app
      .http(HOST)
      .get('/admin/_live/stream?lists=task-nothing-stream')
      .set('Cookie', noTasks.cookie);
    expect(unknown.status).toBe(422);
    const tooMany = await app
      .http(HOST)
      .get(`/admin/_live/stream?lists=${Array.from({ length: MAX_LISTS + 1 }, () => NOTIFICATIONS)}`)
      .set('Cookie', noTasks.cookie);
    expect(tooMany.status).toBe(422);
  });

  it('takes the session cookie only: a bearer token is no caller of the shell (sent to sign in)', async () => {
    const member = await signInAs(app, tenant, ['task:read']);
    const made = await app
      .http(HOST)
      .post('/api/v1/auth/tokens')
      .set('Cookie', member.cookie)
      .send({ name: 'not for pages', permissions: ['task:read'], expiresInDays: 1 });
    expect(made.status).toBe(201);
    const res = await app
      .http(HOST)
      .get(PAGE_STREAM)
      .set('Authorization', `Bearer ${made.body.token as string}`);
    expect(res.status).toBe(303);
    expect(res.headers.location).toMatch(/^\/admin\/login\?next=/);
  });

  it('ends, for every list on it, when the caller loses a list’s permission mid-stream', async () => {
    const reader = await signInAs(app, tenant, ['task:read', 'task:update']);
    const other = await signInAs(app, tenant, ['task:read', 'task:update']);
    const before = app.services.live.openStreams;
    const page = await follow(reader);
    await joined(before + 1);
    await app.services.transactions.run(tenant, (ctx) =>
      ctx.db.executeQuery(
        CompiledQuery.raw(
          `update roles set permissions = '{task:update}' where name = any (select unnest(roles) from users where id = $1)`,
          [reader.userId],
        ),
      ),
    );
    await newTask(other, 'Not for the reader any more');
    const [end] = await page.take(1);
    expect(end!.event).toBe('end');
    expect(JSON.parse(end!.data)).toEqual({ reason: 'AUTH_FORBIDDEN' });
    expect(await page.waitEnd()).toBe(true);
    await joined(before);
  });
});

describe('the shell names what a page follows', () => {
  it('a signed-in page loads live.js and names its stream and the badge’s list; a generated list names its own; the login page none', async () => {
    const reader = await signInAs(app, tenant, ['task:read']);
    const list = await app.http(HOST).get('/admin/task/tasks').set('Cookie', reader.cookie);
    expect(list.status).toBe(200);
    expect(list.text).toContain(`<script src="${SHELL_FILES.live.href}" defer></script>`);
    expect(SHELL_FILES.live.href).toMatch(/^\/admin\/_assets\/live\.js\?v=[\w-]{16}$/);
    expect(list.text).toContain('<body data-live-stream="/admin/_live/stream">');
    expect(list.text).toMatch(
      new RegExp(`id="header-badge"[^>]*data-live-list="${NOTIFICATIONS}" data-live-refresh="/admin/_live/badge"`),
    );
    expect(list.text).toMatch(
      new RegExp(`class="live-notice" role="status" data-live-list="${TASKS}" data-live-rows="/admin/task/tasks/rows"`),
    );
    const login = await app.http(HOST).get('/admin/login');
    expect(login.text).not.toContain('live.js');
    expect(login.text).not.toContain('data-live');
    const script = await app.http(HOST).get('/admin/_assets/live.js');
    expect(script.status).toBe(200);
    expect(script.headers['content-type']).toMatch(/^text\/javascript/);
  });

  it('the badge fragment is the header’s badge alone, counted now', async () => {
    const reader = await signInAs(app, tenant, ['task:read', 'task:update']);
    const task = await newTask(reader, 'For the badge');
    await assign(reader, task.id, reader);
    const badge = await app.http(HOST).get('/admin/_live/badge').set('Cookie', reader.cookie);
    expect(badge.status).toBe(200);
    expect(badge.text.trim()).toMatch(/^<span id="header-badge"[^>]*>/);
    expect(badge.text).toContain('aria-label="1 unread notifications"');
    expect(badge.text).not.toContain('<html');
  });
});
