import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { signInAs, type SignedIn } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { outboxRows } from '../helpers/outbox.ts';

/**
 * POST /api/v1/batch (issue 48, point 3), over HTTP against real PostgreSQL: writes of this
 * tenant's API in one transaction, all or none, each served as if it were sent alone.
 */

const HOST = 'batch.localhost';
const TASKS = '/api/v1/task/tasks';
const t = useTestApp({ customers: ['batch'] });
let writer: SignedIn;
let reader: SignedIn;

beforeAll(async () => {
  writer = await signInAs(t.app, t.batch, ['task:read', 'task:update', 'webhook:manage']);
  reader = await signInAs(t.app, t.batch, ['task:read', 'content:read']);
});

const task = (title: string, extra: Record<string, unknown> = {}) => ({
  title,
  priority: 'high',
  deadline: new Date(Date.now() + 86_400_000).toISOString(),
  ...extra,
});

const batch = (who: SignedIn, requests: unknown[], key?: string) => {
  const req = t.app.http(HOST).post('/api/v1/batch').set('Cookie', who.cookie);
  return (key ? req.set('Idempotency-Key', key) : req).send({ requests });
};

const countTasks = async (prefix: string) =>
  t.app.services.transactions.run(t.batch, async (ctx) => {
    const { rows } = await sql<{
      n: number;
    }>`select count(*)::int as n from tasks where title like ${`${prefix}%`}`.execute(ctx.db);
    return rows[0]!.n;
  });

const createdEvents = async (ids: string[]) =>
  (await outboxRows(t.app, 'task.task.created')).filter((e) => ids.includes(e.payload.id as string));

describe('a batch applies all of its requests or none', () => {
  it('a batch whose third request is invalid leaves nothing, and names that request', async () => {
    const prefix = `none-${randomUUID()}`;
    const res = await batch(writer, [
      { method: 'POST', path: TASKS, body: task(`${prefix} a`) },
      { method: 'POST', path: TASKS, body: task(`${prefix} b`) },
      { method: 'POST', path: TASKS, body: task(`${prefix} c`, { priority: 'urgent' }) },
      { method: 'POST', path: TASKS, body: task(`${prefix} d`) },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(res.body.index).toBe(2);
    expect(res.body.request).toEqual({ method: 'POST', path: TASKS });
    expect(res.body.errors.length).toBeGreaterThan(0);
    for (const error of res.body.errors) expect(error.pointer).toBe('/body/requests/2/body/priority');
    expect(res.body.detail).toMatch(/^Request 2 \(POST \/api\/v1\/task\/tasks\) failed: .*nothing was applied/);
    expect(await countTasks(prefix)).toBe(0);
  });

  it('a failure in the database (a PATCH of an unknown row) after two creates rolls the creates back', async () => {
    const prefix = `late-${randomUUID()}`;
    const res = await batch(writer, [
      { method: 'POST', path: TASKS, body: task(`${prefix} a`) },
      { method: 'POST', path: TASKS, body: task(`${prefix} b`) },
      { method: 'PATCH', path: `${TASKS}/${randomUUID()}`, body: { priority: 'low' } },
    ]);
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ code: 'NOT_FOUND', index: 2 });
    expect(await countTasks(prefix)).toBe(0);
  });

  it('every request applied: each answer as it would be alone, in order, and the events once committed', async () => {
    const prefix = `all-${randomUUID()}`;
    const res = await batch(writer, [
      { method: 'POST', path: TASKS, body: task(`${prefix} a`) },
      { method: 'POST', path: TASKS, body: task(`${prefix} b`) },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const [a, b] = res.body.results;
    expect(a).toMatchObject({ status: 201, operationId: 'task-task-create', body: { title: `${prefix} a` } });
    expect(a.location).toBe(`${TASKS}/${a.body.id}`);
    expect(b.status).toBe(201);

    const more = await batch(writer, [
      { method: 'PATCH', path: `${TASKS}/${a.body.id}`, body: { priority: 'low' } },
      { method: 'POST', path: `${TASKS}/${b.body.id}/resolve`, body: { resolution: 'done in a batch' } },
      { method: 'DELETE', path: `${TASKS}/${a.body.id}` },
    ]);
    expect(more.status, JSON.stringify(more.body)).toBe(200);
    expect(more.body.results.map((r: { status: number }) => r.status)).toEqual([200, 200, 204]);
    expect(more.body.results[0].body.priority).toBe('low');
    expect(more.body.results[1].body.status).toBe('resolved');
    expect(more.body.results[2].body).toBeNull();
    expect(await createdEvents([a.body.id, b.body.id])).toHaveLength(2);
    const names = (await outboxRows(t.app, 'task.task.updated', 'task.resolved', 'task.task.deleted')).filter((e) =>
      [a.body.id, b.body.id].includes(e.payload.id as string),
    );
    expect(names.map((e) => e.name).sort()).toEqual(['task.resolved', 'task.task.deleted', 'task.task.updated']);
    expect(names.every((e) => e.actor_id === writer.userId)).toBe(true);
  });
});

describe('each request is served as if it were sent alone', () => {
  it('a request the caller may not make is 403 with its index, and nothing before it is applied', async () => {
    const prefix = `perm-${randomUUID()}`;
    const res = await batch(writer, [
      { method: 'POST', path: TASKS, body: task(`${prefix} a`) },
      { method: 'POST', path: '/api/v1/content/contents', body: { slug: prefix, title: 'x', kind: 'page', body: '' } },
    ]);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'AUTH_FORBIDDEN', index: 1 });
    expect(await countTasks(prefix)).toBe(0);
    // And a reader may create nothing, even when the batch itself is open to any signed-in caller.
    const read = await batch(reader, [{ method: 'POST', path: TASKS, body: task(`${prefix} r`) }]);
    expect(read.status).toBe(403);
    expect(read.body).toMatchObject({ code: 'AUTH_FORBIDDEN', index: 0 });
  });

  it('a refusal a module declares keeps its own status and code in a batch (not 500 INTERNAL), and nothing is applied', async () => {
    const manager = await signInAs(t.app, t.batch, ['user:manage']);
    const email = `batch-invite-${randomUUID()}@example.test`;
    const res = await batch(manager, [
      { method: 'POST', path: '/api/v1/user/invitations', body: { email } },
      { method: 'POST', path: '/api/v1/user/invitations', body: { email: `x${email}`, roles: ['no-such-role'] } },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body).toMatchObject({ code: 'ROLE_UNKNOWN', index: 1, roles: ['no-such-role'] });
    expect(res.body.errors).toEqual([
      { pointer: '/body/requests/1/body/roles', message: 'unknown role: no-such-role' },
    ]);
    const invited = await t.app.services.transactions.run(t.batch, async (ctx) =>
      ctx.db.selectFrom('users').select('id').where('email', '=', email).execute(),
    );
    expect(invited).toEqual([]);
  });

  it('the protected-field checks are the route’s: a command-owned field is refused with its route', async () => {
    const res = await batch(writer, [
      { method: 'POST', path: TASKS, body: task('owned', { assigneeId: randomUUID() }) },
    ]);
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ code: 'FIELD_COMMAND_OWNED', index: 0, field: 'assigneeId' });
  });

  it('a body member named like an Object.prototype property is an unknown property (422), alone and in a batch', async () => {
    const prefix = `proto-${randomUUID()}`;
    for (const name of ['constructor', 'toString', 'hasOwnProperty']) {
      const body = task(`${prefix} ${name}`, { [name]: 1 });
      const alone = await t.app.http(HOST).post(TASKS).set('Cookie', writer.cookie).send(body);
      expect(alone.status, JSON.stringify(alone.body)).toBe(422);
      expect(alone.body.code).toBe('VALIDATION_FAILED');
      expect(alone.body.errors.map((e: { pointer: string }) => e.pointer)).toContain(`/body/${name}`);
      const inBatch = await batch(writer, [{ method: 'POST', path: TASKS, body }]);
      expect(inBatch.status, JSON.stringify(inBatch.body)).toBe(422);
      expect(inBatch.body).toMatchObject({ code: 'VALIDATION_FAILED', index: 0 });
    }
    const created = await t.app
      .http(HOST)
      .post(TASKS)
      .set('Cookie', writer.cookie)
      .send(task(`${prefix} patched`));
    const patch = await t.app
      .http(HOST)
      .patch(`${TASKS}/${created.body.id}`)
      .set('Cookie', writer.cookie)
      .send({ constructor: 'x' });
    expect(patch.status, JSON.stringify(patch.body)).toBe(422);
    expect(patch.body.code).toBe('VALIDATION_FAILED');
    expect(await countTasks(prefix)).toBe(1);
  });

  it('a request whose body is over its route’s limit (1 MiB) is 413 with its index, as it would be alone', async () => {
    const prefix = `large-${randomUUID()}`;
    const res = await batch(writer, [
      { method: 'POST', path: TASKS, body: task(`${prefix} a`) },
      { method: 'POST', path: TASKS, body: task(`${prefix} b`, { description: 'x'.repeat(1024 * 1024) }) },
    ]);
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', index: 1 });
    expect(await countTasks(prefix)).toBe(0);
  });

  it('a route that runs outside a transaction is refused with a clear 422, and so is a batch inside a batch', async () => {
    const upload = await batch(writer, [{ method: 'POST', path: '/api/v1/file/files', body: {} }]);
    expect(upload.status).toBe(422);
    expect(upload.body).toMatchObject({ code: 'BATCH_REQUEST_UNSUPPORTED', index: 0 });
    expect(upload.body.detail).toMatch(/outside a transaction/);
    const nested = await batch(writer, [{ method: 'POST', path: '/api/v1/batch', body: { requests: [] } }]);
    expect(nested.status).toBe(422);
    expect(nested.body.index).toBe(0);
  });

  it('an unknown path is 404 with its index; reads and more than 100 requests are refused by the schema', async () => {
    const unknown = await batch(writer, [{ method: 'POST', path: '/api/v1/nothing/here', body: {} }]);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ code: 'ROUTE_NOT_FOUND', index: 0 });
    const read = await batch(writer, [{ method: 'GET', path: TASKS }]);
    expect(read.status).toBe(422);
    expect(read.body.code).toBe('VALIDATION_FAILED');
    const many = Array.from({ length: 101 }, (_, i) => ({ method: 'POST', path: TASKS, body: task(`many ${i}`) }));
    const tooMany = await batch(writer, many);
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.errors[0].pointer).toBe('/body/requests');
  });

  it('a path with a dot segment is 404 ROUTE_NOT_FOUND, as alone: it never resolves to another route or out of the API', async () => {
    const prefix = `dots-${randomUUID()}`;
    for (const path of [
      '/api/v1/../../admin/login',
      '/api/v1/%2e%2e/%2E%2e/admin/login',
      '/api/v1/task/../task/tasks',
      '/api/v1/task/./tasks',
      '/api/v1/task/..\\task\\tasks',
    ]) {
      const res = await batch(writer, [{ method: 'POST', path, body: task(`${prefix} ${path}`) }]);
      expect(res.status, `${path}: ${JSON.stringify(res.body).slice(0, 300)}`).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ code: 'ROUTE_NOT_FOUND', index: 0, request: { method: 'POST', path } });
      // What the same request answers sent alone (the router resolves no dot segment).
      expect(res.body.detail).toContain(`No route POST ${path}`);
    }
    expect(await countTasks(prefix)).toBe(0);
  });

  it('a batch needs a signed-in caller', async () => {
    const res = await t.app
      .http(HOST)
      .post('/api/v1/batch')
      .send({ requests: [{ method: 'POST', path: TASKS, body: task('anon') }] });
    expect(res.status).toBe(401);
  });
});

describe('a batch serves its requests inside its own request, not as requests of their own', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  /** The requests the batch dispatches through the request path (fastify's inject), the batch itself left out. */
  const dispatchedBy = (send: () => Promise<unknown>) => {
    const inject = vi.spyOn(t.app.web!, 'inject');
    inject.mockClear();
    return send().then((answer) => ({
      answer,
      dispatched: inject.mock.calls.filter(
        (call) => ((call as unknown[])[0] as { url?: string } | undefined)?.url !== '/api/v1/batch',
      ).length,
    }));
  };

  it('creates, a PATCH, a command and a delete call their operations directly: no request goes through inject', async () => {
    const prefix = `direct-${randomUUID()}`;
    const first = await dispatchedBy(() =>
      batch(writer, [
        { method: 'POST', path: TASKS, body: task(`${prefix} a`) },
        { method: 'POST', path: TASKS, body: task(`${prefix} b`) },
        { method: 'POST', path: `${TASKS}/`, body: task(`${prefix} c`) },
      ]),
    );
    const created = first.answer as Awaited<ReturnType<typeof batch>>;
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(first.dispatched).toBe(0);
    const [a, b] = created.body.results;
    // Each answer is the route's, serialised by its response schema as a create sent alone is.
    const alone = await t.app
      .http(HOST)
      .post(TASKS)
      .set('Cookie', writer.cookie)
      .send(task(`${prefix} alone`));
    expect(alone.status).toBe(201);
    expect(Object.keys(a.body).sort()).toEqual(Object.keys(alone.body).sort());
    expect(a.location).toBe(`${TASKS}/${a.body.id}`);
    const more = await dispatchedBy(() =>
      batch(writer, [
        { method: 'PATCH', path: `${TASKS}/${a.body.id}`, body: { priority: 'low' } },
        { method: 'POST', path: `${TASKS}/${b.body.id}/resolve`, body: { resolution: 'direct' } },
        { method: 'DELETE', path: `${TASKS}/${a.body.id}` },
      ]),
    );
    expect((more.answer as { status: number }).status).toBe(200);
    expect(more.dispatched).toBe(0);
    // A route that opens its own transactions is still dispatched, and refused by its own hook.
    const upload = await dispatchedBy(() => batch(writer, [{ method: 'POST', path: '/api/v1/file/files', body: {} }]));
    expect((upload.answer as { body: { code: string } }).body.code).toBe('BATCH_REQUEST_UNSUPPORTED');
    expect(upload.dispatched).toBe(1);
  });

  it('a batch sent with a personal access token: each request is judged by the token’s own permissions', async () => {
    const tokenWith = async (permissions: string[]) => {
      const made = await t.app
        .http(HOST)
        .post('/api/v1/auth/tokens')
        .set('Cookie', writer.cookie)
        .send({ name: `batch ${permissions.join(' ')}`, permissions });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      return `Bearer ${made.body.token as string}`;
    };
    const prefix = `token-${randomUUID()}`;
    const writes = await tokenWith(['task:read', 'task:update']);
    const reads = await tokenWith(['task:read']);
    const send = (bearer: string) =>
      t.app
        .http(HOST)
        .post('/api/v1/batch')
        .set('Authorization', bearer)
        .send({ requests: [{ method: 'POST', path: TASKS, body: task(`${prefix} a`) }] });
    const allowed = await dispatchedBy(() => send(writes));
    expect((allowed.answer as { status: number }).status).toBe(200);
    expect(allowed.dispatched).toBe(0);
    const refused = (await send(reads)) as { status: number; body: Record<string, unknown> };
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'AUTH_FORBIDDEN', index: 0 });
    expect(await countTasks(prefix)).toBe(1);
  });

  it('the batch’s answer keeps its own status and headers (no request’s 201 or Location), its events its request id', async () => {
    const prefix = `one-request-${randomUUID()}`;
    const res = await batch(writer, [
      { method: 'POST', path: TASKS, body: task(`${prefix} a`) },
      { method: 'POST', path: TASKS, body: task(`${prefix} b`) },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.headers.location).toBeUndefined();
    const requestId = res.headers['x-request-id'];
    expect(requestId).toBeTruthy();
    const ids = res.body.results.map((r: { body: { id: string } }) => r.body.id);
    const { rows } = await t.app.services.db.pool.query<{ request_id: string | null }>(
      `select request_id from outbox where name = 'task.task.created' and payload->>'id' = any($1)`,
      [ids],
    );
    expect(rows.map((r) => r.request_id)).toEqual([requestId, requestId]);
  });
});

describe('an Idempotency-Key covers the whole batch', () => {
  it('a retry replays the answer and applies nothing again; a secret shown once is not kept', async () => {
    const key = randomUUID();
    const prefix = `idem-${randomUUID()}`;
    const requests = [
      { method: 'POST', path: TASKS, body: task(`${prefix} a`) },
      {
        method: 'POST',
        path: '/api/v1/webhook/endpoints',
        body: { url: 'https://hooks.example.com/batch', events: ['task.task.created'] },
      },
    ];
    const first = await batch(writer, requests, key);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const secret = first.body.results[1].body.signingSecret as string;
    expect(secret).toMatch(/^whsec_/);
    const again = await batch(writer, requests, key);
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.headers['idempotent-secrets-withheld']).toBe('/results/1/body/signingSecret');
    expect(again.body.results[0]).toEqual(first.body.results[0]);
    expect(again.body.results[1].body.signingSecret).toBeNull();
    expect(await countTasks(prefix)).toBe(1);
    const kept = await t.app.services.transactions.run(t.batch, async (ctx) => {
      const { rows } = await sql<{
        row: string;
      }>`select k::text as row from idempotency_keys k where key = ${key}`.execute(ctx.db);
      return rows.map((r) => r.row).join('\n');
    });
    expect(kept).toContain(prefix);
    expect(kept).not.toContain(secret.slice('whsec_'.length));
  });
});
