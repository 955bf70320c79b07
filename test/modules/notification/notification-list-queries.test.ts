import { beforeAll, describe, expect, it } from 'vitest';
import { signInAs, type SignedIn } from '../../helpers/app.ts';
import { useTestApp } from '../../helpers/use-test-app.ts';
import { notify } from '../../../modules/notification/notify.ts';

/**
 * Issue 44: the notification list, written by hand, takes the same query language as the generated
 * lists (readAt=is.null: the unread ones), and its own rule still holds: whatever the filter, it
 * lists the caller's own notifications only.
 */

const t = useTestApp({ customers: ['acme'] });
const HOST = 'acme.localhost';
const BASE = '/api/v1/notification/notifications';
let ann: SignedIn;
let bob: SignedIn;
/** Bob's notification ids, which nothing Ann asks may match. */
const bobs: string[] = [];

const send = (recipientId: string, title: string) =>
  t.app.services.transactions.run(t.acme, (ctx) =>
    notify(ctx, { recipientId, title, body: `body of ${title}`, link: '/admin', email: false }),
  );

beforeAll(async () => {
  ann = await signInAs(t.app, t.acme, []);
  bob = await signInAs(t.app, t.acme, []);
  for (const title of ['one', 'two', 'three']) await send(ann.userId, title);
  for (const title of ['bob unread', 'bob read']) bobs.push((await send(bob.userId, title)).id);
  const read = await t.app.http(HOST).get(`${BASE}?title=eq.two`).set('Cookie', ann.cookie);
  expect((await t.app.http(HOST).post(`${BASE}/${read.body.items[0].id}/read`).set('Cookie', ann.cookie)).status).toBe(
    200,
  );
  expect((await t.app.http(HOST).post(`${BASE}/${bobs[1]}/read`).set('Cookie', bob.cookie)).status).toBe(200);
});

const titles = async (query: string, who: SignedIn = ann) => {
  const res = await t.app.http(HOST).get(`${BASE}?${query}`).set('Cookie', who.cookie);
  expect(res.status, `${query}: ${JSON.stringify(res.body)}`).toBe(200);
  return (res.body.items as { title: string }[]).map((n) => n.title).sort();
};

describe('the notification list answers questions', () => {
  it('readAt=is.null answers only the unread ones, readAt=not.is.null the read ones', async () => {
    expect(await titles('readAt=is.null')).toEqual(['one', 'three']);
    expect(await titles('readAt=not.is.null')).toEqual(['two']);
    const res = await t.app.http(HOST).get(`${BASE}?readAt=is.null&fields=title`).set('Cookie', ann.cookie);
    expect(res.body).toMatchObject({ total: 2, totalExact: true });
    expect(res.body.items.map((n: object) => Object.keys(n).sort())).toEqual([
      ['id', 'title'],
      ['id', 'title'],
    ]);
  });

  it('filters and sorts by its other fields, refusing what it does not take with what it does', async () => {
    expect(await titles('title=startsWith.t&sort=title')).toEqual(['three', 'two']);
    expect(await titles('or=(title.eq.one,readAt.not.is.null)')).toEqual(['one', 'two']);
    expect(await titles('createdAt=gte.now-1h&body=contains.THREE')).toEqual(['three']);
    const refused = await t.app.http(HOST).get(`${BASE}?readAt=eq.yesterday`).set('Cookie', ann.cookie);
    expect(refused.status).toBe(422);
    expect(refused.body.errors[0]).toMatchObject({ pointer: '/querystring/readAt' });
    const unknown = await t.app.http(HOST).get(`${BASE}?recipientId=eq.${bob.userId}`).set('Cookie', ann.cookie);
    expect(unknown.status).toBe(422);
    expect(unknown.body.errors[0].message).toMatch(/readAt/);
  });

  it("never matches another person's notifications, whatever the filter", async () => {
    for (const query of [
      `id=eq.${bobs[0]}`,
      `id=in.(${bobs.join(',')})`,
      'title=startsWith.bob',
      `or=(id.eq.${bobs[0]},title.contains.bob)`,
      'readAt=not.is.null&title=eq.bob read',
    ]) {
      expect(await titles(query), query).toEqual([]);
    }
    // Bob's own ask finds his.
    expect(await titles('title=startsWith.bob', bob)).toEqual(['bob read', 'bob unread']);
  });

  it('pages the filtered list with its cursor, which holds only under the same filters', async () => {
    const first = await t.app.http(HOST).get(`${BASE}?readAt=is.null&limit=1`).set('Cookie', ann.cookie);
    expect(first.body.items.map((n: { title: string }) => n.title)).toEqual(['three']);
    const next = await t.app
      .http(HOST)
      .get(`${BASE}?readAt=is.null&limit=1&after=${first.body.next}`)
      .set('Cookie', ann.cookie);
    expect(next.body.items.map((n: { title: string }) => n.title)).toEqual(['one']);
    const other = await t.app.http(HOST).get(`${BASE}?limit=1&after=${first.body.next}`).set('Cookie', ann.cookie);
    expect(other.status).toBe(422);
    // Nor for another person, under the same filters.
    const bobsTry = await t.app
      .http(HOST)
      .get(`${BASE}?readAt=is.null&limit=1&after=${first.body.next}`)
      .set('Cookie', bob.cookie);
    expect(bobsTry.status).toBe(422);
  });
});
