import { beforeAll, describe, expect, it } from 'vitest';
import { createHash, randomUUID } from 'node:crypto';
import { createCustomer, signInAs, type SignedIn } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { JobRunner } from '../../framework/events/jobs.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

/**
 * Idempotent POSTs (Stripe's Idempotency-Key convention) on the generic create and command
 * routes, against real PostgreSQL: a retry replays the first answer and acts once.
 */

const TASKS = '/api/v1/task/tasks';
const HOST = 'idem.localhost';
const OTHER_HOST = 'idem-other.localhost';
const PERMISSIONS = ['task:read', 'task:update'];

const t = useTestApp();
let tenant: TenantRef;
let other: TenantRef;
let alice: SignedIn;
let bob: SignedIn;
let carol: SignedIn;

beforeAll(async () => {
  tenant = await createCustomer(t.app, 'idem', HOST);
  other = await createCustomer(t.app, 'idem-other', OTHER_HOST);
  alice = await signInAs(t.app, tenant, PERMISSIONS);
  bob = await signInAs(t.app, tenant, PERMISSIONS);
  carol = await signInAs(t.app, other, PERMISSIONS);
});

const taskBody = (title: string) => ({
  title,
  priority: 'high',
  deadline: new Date(Date.now() + 86400_000).toISOString(),
});

const create = (who: SignedIn, body: object, key?: string, host = HOST) => {
  const req = t.app.http(host).post(TASKS).set('Cookie', who.cookie);
  return (key === undefined ? req : req.set('Idempotency-Key', key)).send(body);
};

/** Rows and created events with this title, as stored: the effect counted where it lands. */
async function effects(title: string): Promise<{ tasks: number; events: number }> {
  const { rows } = await t.app.services.db.pool.query<{ tasks: number; events: number }>(
    `select (select count(*)::int from tasks where title = $1) as tasks,
            (select count(*)::int from outbox where name = 'task.task.created' and payload->>'id' in (select id::text from tasks where title = $1)) as events`,
    [title],
  );
  return rows[0]!;
}

async function storedKeys(key: string): Promise<number> {
  const { rows } = await t.app.services.db.pool.query<{ n: number }>(
    'select count(*)::int as n from idempotency_keys where key = $1',
    [key],
  );
  return rows[0]!.n;
}

describe('the same key with the same request replays the first answer', () => {
  it('a retried create answers the same status, body and Location, and creates one task and one event', async () => {
    const key = randomUUID();
    const body = taskBody(`replay ${key}`);
    const first = await create(alice, body, key);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const again = await create(alice, body, key);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.location).toBe(first.headers.location);
    expect(again.headers['idempotent-replayed']).toBe('true');
    const { tasks, events } = await effects(body.title);
    expect(tasks).toBe(1);
    // The outbox may have been relayed and purged by now only with a worker; this app runs none.
    expect(events).toBe(1);
  });

  it('the same body with its fields in another order is the same request', async () => {
    const key = randomUUID();
    const body = taskBody(`order ${key}`);
    const first = await create(alice, body, key);
    const reordered = { deadline: body.deadline, priority: body.priority, title: body.title };
    const again = await create(alice, reordered, key);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect((await effects(body.title)).tasks).toBe(1);
  });

  it('without the header, two identical creates make two tasks (the key is what makes a retry safe)', async () => {
    const body = taskBody(`no key ${randomUUID()}`);
    expect((await create(alice, body)).status).toBe(201);
    expect((await create(alice, body)).status).toBe(201);
    expect((await effects(body.title)).tasks).toBe(2);
  });

  it('a retried command replays its answer and runs once (one task.resolved event)', async () => {
    const created = await create(alice, taskBody(`command ${randomUUID()}`));
    const id = created.body.id as string;
    const key = randomUUID();
    const resolve = () =>
      t.app
        .http(HOST)
        .post(`${TASKS}/${id}/resolve`)
        .set('Cookie', alice.cookie)
        .set('Idempotency-Key', key)
        .send({ resolution: 'done' });
    const first = await resolve();
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    // Run again without the key, resolving a resolved task is 409: the replay is not a second run.
    const again = await resolve();
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    const { rows } = await t.app.services.db.pool.query<{ n: number }>(
      `select count(*)::int as n from outbox where name = 'task.resolved' and payload->>'id' = $1`,
      [id],
    );
    expect(rows[0]!.n).toBe(1);
  });
});

describe('the same key with another request', () => {
  it('answers 422 IDEMPOTENCY_KEY_REUSED and does nothing', async () => {
    const key = randomUUID();
    const body = taskBody(`reused ${key}`);
    expect((await create(alice, body, key)).status).toBe(201);
    const changed = await create(alice, { ...body, title: `${body.title} (changed)` }, key);
    expect(changed.status).toBe(422);
    expect(changed.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(changed.body.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect((await effects(`${body.title} (changed)`)).tasks).toBe(0);
  });

  it('another path with the same key is another request too', async () => {
    const key = randomUUID();
    const created = await create(alice, taskBody(`path ${key}`), key);
    const id = created.body.id as string;
    const res = await t.app
      .http(HOST)
      .post(`${TASKS}/${id}/resolve`)
      .set('Cookie', alice.cookie)
      .set('Idempotency-Key', key)
      .send({ resolution: 'x' });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('IDEMPOTENCY_KEY_REUSED');
  });
});

describe('concurrent requests with the same key', () => {
  it('ten at once create one task; every answer is the first one (the others waited for it)', async () => {
    const key = randomUUID();
    const body = taskBody(`concurrent ${key}`);
    const answers = await Promise.all(Array.from({ length: 10 }, () => create(alice, body, key)));
    for (const answer of answers) expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    const ids = new Set(answers.map((a) => a.body.id));
    expect(ids.size).toBe(1);
    for (const answer of answers) expect(answer.body).toEqual(answers[0]!.body);
    expect(answers.filter((a) => a.headers['idempotent-replayed'] === undefined)).toHaveLength(1);
    expect(await effects(body.title)).toEqual({ tasks: 1, events: 1 });
  });
});

describe('keys are scoped to tenant and caller', () => {
  it("another caller's same key, and another tenant's, act independently", async () => {
    const key = randomUUID();
    const body = taskBody(`scoped ${key}`);
    const mine = await create(alice, body, key);
    const bobs = await create(bob, body, key);
    const carols = await create(carol, body, key, OTHER_HOST);
    for (const res of [mine, bobs, carols]) {
      expect(res.status).toBe(201);
      expect(res.headers['idempotent-replayed']).toBeUndefined();
    }
    expect(new Set([mine.body.id, bobs.body.id, carols.body.id]).size).toBe(3);
    expect(await storedKeys(key)).toBe(3);
  });
});

describe('what a key keeps of its request', () => {
  it("is no digest a reader of the row could recompute: a set-password's password cannot be tried against it", async () => {
    const admin = await signInAs(t.app, tenant, ['*']);
    const person = await t.app.services.transactions.run(tenant, async (ctx) =>
      ctx.db
        .insertInto('users')
        .values({ email: `pw-${randomUUID()}@example.test`, display_name: 'Pat', status: 'active', roles: [] })
        .returning('id')
        .executeTakeFirstOrThrow(),
    );
    const key = randomUUID();
    const path = `/api/v1/user/users/${person.id}/set-password`;
    const body = { password: 'guessable password 1' };
    const send = () => t.app.http(HOST).post(path).set('Cookie', admin.cookie).set('Idempotency-Key', key).send(body);
    expect((await send()).status).toBe(200);
    const { rows } = await t.app.services.db.pool.query<{ request_hash: Buffer }>(
      'select request_hash from idempotency_keys where key = $1',
      [key],
    );
    // What the request alone gives (method, path, body): anyone who read the row could try
    // passwords against it at SHA-256's speed, past argon2id.
    const guess = createHash('sha256').update(`POST ${path}\n`).update(JSON.stringify(body)).digest();
    expect(rows[0]!.request_hash.equals(guess)).toBe(false);
    // And the key still knows its request: a retry replays, another body is refused.
    const again = await send();
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    const other = await t.app.http(HOST).post(path).set('Cookie', admin.cookie).set('Idempotency-Key', key).send({
      password: 'another password 2',
    });
    expect(other.status).toBe(422);
    expect(other.body.code).toBe('IDEMPOTENCY_KEY_REUSED');
  });
});

describe('a failed request leaves no key', () => {
  it('a refused command (409) stores nothing: the same key may be retried once the task allows it', async () => {
    const created = await create(alice, taskBody(`failed ${randomUUID()}`));
    const id = created.body.id as string;
    const key = randomUUID();
    const resolve = () =>
      t.app
        .http(HOST)
        .post(`${TASKS}/${id}/resolve`)
        .set('Cookie', alice.cookie)
        .set('Idempotency-Key', key)
        .send({ resolution: 'done' });
    // Resolved first without a key, so the keyed resolve fails with 409.
    expect(
      (await t.app.http(HOST).post(`${TASKS}/${id}/resolve`).set('Cookie', alice.cookie).send({ resolution: 'done' }))
        .status,
    ).toBe(200);
    const refused = await resolve();
    expect(refused.status).toBe(409);
    expect(await storedKeys(key)).toBe(0);
  });

  it('a body failing validation (422) stores nothing; the key then serves the corrected request', async () => {
    const key = randomUUID();
    const title = `invalid ${key}`;
    const invalid = await create(alice, { title, priority: 'urgent-ish', deadline: new Date().toISOString() }, key);
    expect(invalid.status).toBe(422);
    expect(await storedKeys(key)).toBe(0);
    const valid = await create(alice, taskBody(title), key);
    expect(valid.status).toBe(201);
    expect(await storedKeys(key)).toBe(1);
  });

  it('a caller without the permission (403) stores nothing', async () => {
    const reader = await signInAs(t.app, tenant, ['task:read']);
    const key = randomUUID();
    expect((await create(reader, taskBody(`forbidden ${key}`), key)).status).toBe(403);
    expect(await storedKeys(key)).toBe(0);
  });
});

describe('the key itself', () => {
  it.each([
    ['empty', ''],
    ['longer than 255 characters', 'k'.repeat(256)],
    ['not printable ASCII', 'clé-ü'],
  ])('a key that is %s answers 422 VALIDATION_FAILED and creates nothing', async (_what, key) => {
    const body = taskBody(`bad key ${randomUUID()}`);
    const res = await create(alice, body, key);
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    // Refused by the route's headers schema, before the handler (not by the table's check).
    expect(res.body.errors.map((e: { pointer: string }) => e.pointer)).toContain('/headers/idempotency-key');
    expect((await effects(body.title)).tasks).toBe(0);
  });

  it('255 printable characters are accepted', async () => {
    const key = `${randomUUID()}${'~'.repeat(219)}`;
    expect(key).toHaveLength(255);
    expect((await create(alice, taskBody(`long key ${key.slice(0, 8)}`), key)).status).toBe(201);
  });
});

describe('the 24-hour lifetime and the purge', () => {
  async function age(key: string, hours: number): Promise<void> {
    await t.app.services.db.pool.query(
      `update idempotency_keys set created_at = now() - make_interval(hours => $2) where key = $1`,
      [key, hours],
    );
  }

  it('a key older than 24 hours is taken as new: the request acts again', async () => {
    const key = randomUUID();
    const body = taskBody(`expired ${key}`);
    expect((await create(alice, body, key)).status).toBe(201);
    await age(key, 25);
    const again = await create(alice, body, key);
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    expect((await effects(body.title)).tasks).toBe(2);
  });

  it('idempotency-key-purge deletes the keys older than 24 hours and keeps the others', async () => {
    const old = randomUUID();
    const recent = randomUUID();
    expect((await create(alice, taskBody(`purge ${old}`), old)).status).toBe(201);
    expect((await create(alice, taskBody(`purge ${recent}`), recent)).status).toBe(201);
    await age(old, 25);
    await age(recent, 23);
    const [outcome] = await new JobRunner(t.app.services).runOnce('idempotency-key-purge', { tenant });
    expect(outcome!.ok, outcome!.error).toBe(true);
    expect(await storedKeys(old)).toBe(0);
    expect(await storedKeys(recent)).toBe(1);
  });
});
