import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { SettableClock } from '../../../framework/clock.ts';
import { notify } from '../../../modules/notification/notify.ts';

// POST /api/v1/notification/notifications/read (issue 35, point 5: the notifications page's
// "Mark all as read" runs it): the caller's unread ones, read now, one event each, nobody else's.

const clock = new SettableClock();
const host = 'mark-all.localhost';
const READ_ALL = '/api/v1/notification/notifications/read';
let app: TestApp;
let acme: TenantRef;
let ann: SignedIn;
let bob: SignedIn;

beforeAll(async () => {
  app = await startTestApp({ clock });
  acme = await createCustomer(app, 'mark-all', host);
  ann = await signInAs(app, acme, []);
  bob = await signInAs(app, acme, []);
});
afterAll(async () => {
  await app?.close();
});

const send = (recipientId: string, title: string) =>
  app.services.transactions.run(acme, (ctx) =>
    notify(ctx, { recipientId, title, body: '', link: '/admin', email: false }),
  );
const rows = async () =>
  (
    await app.services.db.pool.query<{ title: string; read_at: Date | null }>(
      'select title, read_at from notifications where tenant_id = $1 order by title',
      [acme.id],
    )
  ).rows;
const readEvents = async () =>
  (
    await app.services.db.pool.query<{ payload: { id: string; recipientId: string } }>(
      `select payload from outbox where tenant_id = $1 and name = 'notification.read'`,
      [acme.id],
    )
  ).rows.map((r) => r.payload);

describe('POST /api/v1/notification/notifications/read: mark all my notifications read', () => {
  it('marks every unread one of the caller read at the clock’s time, one notification.read each, and leaves others’ alone', async () => {
    await send(ann.userId, 'ann 1');
    await send(ann.userId, 'ann 2');
    await send(ann.userId, 'ann 3');
    await send(bob.userId, 'bob 1');
    // One already read keeps its time and gets no second event.
    const earlier = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000);
    clock.set(earlier);
    const first = (
      await app.http(host).get('/api/v1/notification/notifications?limit=3').set('Cookie', ann.cookie)
    ).body.items.find((n: { title: string }) => n.title === 'ann 1');
    expect(
      (await app.http(host).post(`/api/v1/notification/notifications/${first.id}/read`).set('Cookie', ann.cookie))
        .status,
    ).toBe(200);
    const now = new Date(earlier.getTime() + 30_000);
    clock.set(now);

    const res = await app.http(host).post(READ_ALL).set('Cookie', ann.cookie);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ marked: 2 });
    // The clock runs on from where it was set: times are compared to the moments it was set to.
    const [ann1, ann2, ann3, bob1] = await rows();
    expect(ann1!.read_at!.getTime()).toBeLessThan(now.getTime());
    expect(ann2!.read_at!.getTime()).toBeGreaterThanOrEqual(now.getTime());
    expect(ann3!.read_at).toEqual(ann2!.read_at);
    expect(bob1).toEqual({ title: 'bob 1', read_at: null });
    const events = await readEvents();
    expect(events).toHaveLength(3);
    expect(events.every((e) => e.recipientId === ann.userId)).toBe(true);

    // Nothing left unread: nothing marked, nothing published.
    const again = await app.http(host).post(READ_ALL).set('Cookie', ann.cookie);
    expect(again.body).toEqual({ marked: 0 });
    expect(await readEvents()).toHaveLength(3);
  });

  it('is for signed-in callers only', async () => {
    const res = await app.http(host).post(READ_ALL);
    expect(res.status).toBe(401);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  });
});
