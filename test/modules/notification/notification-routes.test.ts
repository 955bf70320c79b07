import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { SettableClock } from '../../../framework/clock.ts';
import { notify } from '../../../modules/notification/notify.ts';
import { withoutRequestId } from '../../helpers/problems.ts';

const clock = new SettableClock();
// Sessions expire 30 days from the database's now: the clock stays within them.
const BASE_TIME = Math.floor(Date.now() / 60_000) * 60_000 + 3_600_000;
const at = (minutes: number) => new Date(BASE_TIME + minutes * 60_000);
let app: TestApp;
let acme: TenantRef;
let ann: SignedIn;
let bob: SignedIn;
const host = 'notes-acme.localhost';
beforeAll(async () => {
  app = await startTestApp({ clock });
  acme = await createCustomer(app, 'notes-acme');
  ann = await signInAs(app, acme, []);
  bob = await signInAs(app, acme, []);
});
afterAll(async () => {
  await app?.close();
});

const BASE = '/api/v1/notification/notifications';
const send = (recipientId: string, title: string) =>
  app.services.transactions.run(acme, (ctx) =>
    notify(ctx, { recipientId, title, body: `body of ${title}`, link: '/admin', email: false }),
  );
const readEvents = async (id: string) =>
  (
    await app.services.db.pool.query(
      `select payload from outbox where name = 'notification.read' and payload->>'id' = $1`,
      [id],
    )
  ).rows;

describe('GET /api/v1/notification/notifications', () => {
  it('returns the caller’s own notifications, newest first, with the framework’s paging and the six fields', async () => {
    for (const [i, title] of ['first', 'second', 'third'].entries()) {
      clock.set(at(i));
      await send(ann.userId, title);
    }
    await send(bob.userId, 'for bob');
    const res = await app.http(host).get(BASE).set('Cookie', ann.cookie);
    expect(res.status).toBe(200);
    expect(res.body.items.map((n: { title: string }) => n.title).slice(0, 3)).toEqual(['third', 'second', 'first']);
    expect(res.body.items.some((n: { title: string }) => n.title === 'for bob')).toBe(false);
    expect(Object.keys(res.body.items[0]).sort()).toEqual(['body', 'createdAt', 'id', 'link', 'readAt', 'title']);
    expect(res.body.items[0]).toMatchObject({ title: 'third', body: 'body of third', link: '/admin', readAt: null });
    expect(res.body).toMatchObject({ total: 3, totalExact: true, limit: 20, offset: 0, next: null });

    const page1 = await app.http(host).get(`${BASE}?limit=2`).set('Cookie', ann.cookie);
    expect(page1.body.items.map((n: { title: string }) => n.title)).toEqual(['third', 'second']);
    const page2 = await app.http(host).get(`${BASE}?limit=2&after=${page1.body.next}`).set('Cookie', ann.cookie);
    expect(page2.body.items.map((n: { title: string }) => n.title)).toEqual(['first']);
    const oldest = await app.http(host).get(`${BASE}?sort=createdAt&limit=1`).set('Cookie', ann.cookie);
    expect(oldest.body.items[0].title).toBe('first');
  });

  it('is for signed-in callers only', async () => {
    const res = await app.http(host).get(BASE);
    expect(res.status).toBe(401);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  });
});

describe('POST /api/v1/notification/notifications/{id}/read', () => {
  it('marks one of the caller’s own read at the clock’s time and returns it; marking again changes nothing and notification.read goes out once', async () => {
    const { id } = await send(ann.userId, 'to read');
    clock.set(at(10));
    const first = await app.http(host).post(`${BASE}/${id}/read`).set('Cookie', ann.cookie);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ id, title: 'to read' });
    // The settable clock runs on from where it was set: readAt is its reading, not the database's.
    const readAt = Date.parse(first.body.readAt);
    expect(readAt - at(10).getTime()).toBeGreaterThanOrEqual(0);
    expect(readAt - at(10).getTime()).toBeLessThan(5_000);
    expect(await readEvents(id)).toEqual([{ payload: { id, recipientId: ann.userId } }]);

    clock.set(at(20));
    const again = await app.http(host).post(`${BASE}/${id}/read`).set('Cookie', ann.cookie);
    expect(again.status).toBe(200);
    expect(again.body.readAt).toBe(first.body.readAt);
    expect(await readEvents(id)).toHaveLength(1);
  });

  it('answers somebody else’s notification with 404, like an unknown id, and leaves it unread', async () => {
    const { id } = await send(bob.userId, 'bob only');
    const res = await app.http(host).post(`${BASE}/${id}/read`).set('Cookie', ann.cookie);
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const unknown = await app
      .http(host)
      .post(`${BASE}/00000000-0000-4000-8000-000000000000/read`)
      .set('Cookie', ann.cookie);
    expect(withoutRequestId(res.body)).toEqual(withoutRequestId(unknown.body));
    expect((await app.http(host).post(`${BASE}/not-a-uuid/read`).set('Cookie', ann.cookie)).status).toBe(404);
    const mine = await app.http(host).get(BASE).set('Cookie', bob.cookie);
    expect(mine.body.items.find((n: { id: string }) => n.id === id).readAt).toBeNull();
    expect(await readEvents(id)).toEqual([]);
  });

  it('is, with mark-all-read, the only write route: no create, PATCH or DELETE of notifications is served', async () => {
    const { id } = await send(ann.userId, 'no other writes');
    const routes = app.services.routes
      .map((r) => `${r.route.method} ${r.route.url}`)
      .filter((r) => r.includes('/api/v1/notification/'));
    // The live stream (GET …/stream) is a read route like the list.
    expect(routes.sort()).toEqual([`GET ${BASE}`, `GET ${BASE}/stream`, `POST ${BASE}/:id/read`, `POST ${BASE}/read`]);
    // A known path asked with an undeclared method: 405 with Allow (RFC 9110).
    const create = await app.http(host).post(BASE).set('Cookie', ann.cookie).send({ title: 'x' });
    expect(create.status).toBe(405);
    expect(create.headers.allow).toBe('GET, HEAD');
    expect((await app.http(host).patch(`${BASE}/${id}`).set('Cookie', ann.cookie).send({ readAt: null })).status).toBe(
      404,
    );
    expect((await app.http(host).delete(`${BASE}/${id}`).set('Cookie', ann.cookie)).status).toBe(404);
  });
});
