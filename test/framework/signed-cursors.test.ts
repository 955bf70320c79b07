import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { signInAs, startTestApp, type SignedIn } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { APP_ROLE } from '../../framework/context/tx.ts';

// Issue 41, point 7: a list answers only the cursors it gave. Each cursor is signed (HMAC-SHA256
// under a key from the installation's secret) over the list, the tenant, the sort and the filters.

const t = useTestApp({ customers: ['acme', 'globex'] });
const PERMISSIONS = ['task:read', 'task:update', 'user:read'];

async function caller(tenant: 'acme' | 'globex'): Promise<SignedIn> {
  return signInAs(t.app, t[tenant], PERMISSIONS);
}

async function withTasks(tenant: 'acme' | 'globex', who: SignedIn, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const res = await t.app
      .http(`${tenant}.localhost`)
      .post('/api/v1/task/tasks')
      .set('Cookie', who.cookie)
      .send({ title: `Task ${i}`, priority: 'low', deadline: new Date(Date.now() + 86_400_000).toISOString() });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
}

const list = (tenant: 'acme' | 'globex', who: SignedIn, path: string) =>
  t.app.http(`${tenant}.localhost`).get(path).set('Cookie', who.cookie);

/** The payload of a cursor (its JSON) and its signature (none on an unsigned cursor), as bytes. */
const parts = (cursor: string) => {
  const bytes = Buffer.from(cursor, 'base64url');
  try {
    JSON.parse(bytes.toString('utf8'));
    return { payload: bytes.toString('utf8'), mac: Buffer.alloc(0) };
  } catch {
    return { payload: bytes.subarray(0, bytes.length - 16).toString('utf8'), mac: bytes.subarray(bytes.length - 16) };
  }
};

function expectRefused(res: { status: number; body: Record<string, unknown> }): void {
  expect(res.status, JSON.stringify(res.body)).toBe(422);
  expect(res.body).toMatchObject({
    code: 'VALIDATION_FAILED',
    errors: [{ pointer: '/querystring/after', message: 'after is not a cursor this list gave' }],
  });
}

describe('a list answers only the cursors it gave', () => {
  it('follows its own cursor, from the cookie path and the bearer path alike', async () => {
    const ann = await caller('acme');
    await withTasks('acme', ann, 3);
    const first = await list('acme', ann, '/api/v1/task/tasks?limit=1');
    expect(first.body).toMatchObject({ total: 3, totalExact: true, next: expect.any(String) });
    const second = await list('acme', ann, `/api/v1/task/tasks?limit=1&after=${first.body.next}`);
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ total: 3, next: expect.any(String) });
    expect(second.body.items[0].id).not.toBe(first.body.items[0].id);
    // A bearer request is served by the handler, a cookie request in one exchange: one list, one cursor.
    const token = await t.app
      .http('acme.localhost')
      .post('/api/v1/auth/tokens')
      .set('Cookie', ann.cookie)
      .send({ name: 'reader', permissions: ['task:read'] });
    const viaToken = await t.app
      .http('acme.localhost')
      .get(`/api/v1/task/tasks?limit=1&after=${first.body.next}`)
      .set('Authorization', `Bearer ${token.body.token}`);
    expect(viaToken.status).toBe(200);
    expect(viaToken.body.items).toEqual(second.body.items);
    const back = await list('acme', ann, `/api/v1/task/tasks?limit=1&after=${viaToken.body.next}`);
    expect(back.status).toBe(200);
  });

  it('refuses a cursor whose count was edited (7777) instead of answering it as the total', async () => {
    const bob = await caller('acme');
    const first = await list('acme', bob, '/api/v1/task/tasks?limit=1');
    const { payload, mac } = parts(first.body.next);
    const edited = JSON.parse(payload) as unknown[];
    edited[3] = 7777;
    const forged = Buffer.concat([Buffer.from(JSON.stringify(edited)), mac]).toString('base64url');
    expectRefused(await list('acme', bob, `/api/v1/task/tasks?limit=1&after=${forged}`));
  });

  it("refuses a tasks cursor on the users list, and another sort's with the sort named", async () => {
    const cid = await caller('acme');
    await signInAs(t.app, t.acme, ['task:read']);
    const tasks = await list('acme', cid, '/api/v1/task/tasks?limit=1');
    expect(tasks.body.next).toEqual(expect.any(String));
    expectRefused(await list('acme', cid, `/api/v1/user/users?limit=1&after=${tasks.body.next}`));
    const users = await list('acme', cid, '/api/v1/user/users?limit=1');
    expect((await list('acme', cid, `/api/v1/user/users?limit=1&after=${users.body.next}`)).status).toBe(200);
    const otherSort = await list('acme', cid, `/api/v1/task/tasks?limit=1&sort=-createdAt&after=${tasks.body.next}`);
    expect(otherSort.status).toBe(422);
    expect(otherSort.body.detail).toMatch(/given for sort=createdAt/);
  });

  it("refuses tenant A's cursor at tenant B, the same list", async () => {
    const dan = await caller('acme');
    const eve = await caller('globex');
    await withTasks('globex', eve, 2);
    const acmeTasks = await list('acme', dan, '/api/v1/task/tasks?limit=1');
    expect(acmeTasks.body.next).toEqual(expect.any(String));
    expectRefused(await list('globex', eve, `/api/v1/task/tasks?limit=1&after=${acmeTasks.body.next}`));
  });

  it('refuses garbage, an unsigned cursor of an earlier release, and a cursor given for other filters', async () => {
    const fay = await caller('acme');
    for (const garbage of ['x', 'bm9wZQ', 'A'.repeat(200)])
      expectRefused(await list('acme', fay, `/api/v1/task/tasks?after=${garbage}`));
    const first = await list('acme', fay, '/api/v1/task/tasks?limit=1');
    const unsigned = Buffer.from(parts(first.body.next).payload).toString('base64url');
    expectRefused(await list('acme', fay, `/api/v1/task/tasks?limit=1&after=${unsigned}`));
    // A search narrows the list: its cursor is the search's, and the unsearched list's is not.
    const searched = await list('acme', fay, '/api/v1/task/tasks?limit=1&q=task');
    expect(searched.body.next).toEqual(expect.any(String));
    expect((await list('acme', fay, `/api/v1/task/tasks?limit=1&q=task&after=${searched.body.next}`)).status).toBe(200);
    expectRefused(await list('acme', fay, `/api/v1/task/tasks?limit=1&q=task%200&after=${searched.body.next}`));
    expectRefused(await list('acme', fay, `/api/v1/task/tasks?limit=1&after=${searched.body.next}`));
    expectRefused(await list('acme', fay, `/api/v1/task/tasks?limit=1&q=task&after=${first.body.next}`));
  });
});

describe("the installation's secret", () => {
  it('is the same in every process on the database and after a restart, never logged, and no tenant reads it', async () => {
    const gus = await caller('acme');
    const first = await list('acme', gus, '/api/v1/task/tasks?limit=1');
    expect(first.body.next).toEqual(expect.any(String));
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    // A second process on the same database, with a log at its most talkative.
    const second = await startTestApp({
      databaseUrl: t.app.databaseUrl,
      logger: pino({ level: 'trace' }, sink) as unknown as FastifyBaseLogger,
    });
    try {
      const res = await second
        .http('acme.localhost')
        .get(`/api/v1/task/tasks?limit=1&after=${first.body.next}`)
        .set('Cookie', gus.cookie);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const { rows } = await second.services.db.pool.query<{ secret: Buffer }>(
        'select secret from installation_secret',
      );
      expect(rows).toHaveLength(1);
      const secret = rows[0]!.secret;
      expect(secret).toHaveLength(32);
      const log = lines.join('');
      expect(log.length).toBeGreaterThan(0);
      for (const form of ['hex', 'base64', 'base64url'] as const) expect(log).not.toContain(secret.toString(form));
    } finally {
      await second.close();
    }
    // The restricted role every tenant transaction runs as cannot read the table.
    const { rows } = await t.app.services.db.pool.query<{ readable: boolean }>(
      `select has_table_privilege($1, 'installation_secret', 'select') as readable`,
      [APP_ROLE],
    );
    expect(rows).toEqual([{ readable: false }]);
  });
});
