import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTENTS, contentSite, createContent, uniqueSlug, type ContentSite } from './support.ts';

// Issue 46's acceptance: a deleted content item is restored and readable again; a slug taken
// meanwhile is 409 naming the field.
let site: ContentSite;
beforeAll(async () => {
  site = await contentSite('content-history');
});
afterAll(async () => {
  await site?.app.close();
});

const http = () => site.app.http(site.host);
const historyOf = async (id: string) => {
  const res = await http().get(`${CONTENTS}/${id}/history`).set('Cookie', site.cookie);
  expect(res.status).toBe(200);
  return res.body.items as {
    id: string;
    operation: string;
    changes: { field: string; old: unknown; new: unknown }[];
  }[];
};

describe('a content item’s history', () => {
  it('a deleted content item is restored and readable again', async () => {
    const item = await createContent(site, { title: 'About us', body: 'Who we are.' });
    expect(
      (await http().patch(`${CONTENTS}/${item.id}`).set('Cookie', site.cookie).send({ body: 'Who we are, and why.' }))
        .status,
    ).toBe(200);
    expect((await http().delete(`${CONTENTS}/${item.id}`).set('Cookie', site.cookie)).status).toBe(204);
    expect((await http().get(`${CONTENTS}/${item.id}`).set('Cookie', site.cookie)).status).toBe(404);

    const history = await historyOf(item.id);
    expect(history.map((r) => r.operation)).toEqual(['delete', 'update', 'create']);
    expect(history[1]!.changes).toEqual([{ field: 'body', old: 'Who we are.', new: 'Who we are, and why.' }]);
    const restored = await http()
      .post(`${CONTENTS}/${item.id}/restore`)
      .set('Cookie', site.cookie)
      .send({ revision: history[1]!.id });
    expect(restored.status).toBe(200);
    expect(restored.body).toMatchObject({ row: { id: item.id, body: 'Who we are, and why.' }, restored: [] });

    const read = await http().get(`${CONTENTS}/${item.id}`).set('Cookie', site.cookie);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ title: 'About us', body: 'Who we are, and why.', slug: item.slug });
    const listed = await http().get(`${CONTENTS}?q=About`).set('Cookie', site.cookie);
    expect(listed.body.items.map((c: { id: string }) => c.id)).toContain(item.id);
    expect((await historyOf(item.id))[0]!.operation).toBe('restore');
  });

  it('a slug another item took meanwhile is 409 SLUG_TAKEN naming the field, and the item stays deleted', async () => {
    const slug = uniqueSlug('taken');
    const first = await createContent(site, { slug });
    expect((await http().delete(`${CONTENTS}/${first.id}`).set('Cookie', site.cookie)).status).toBe(204);
    await createContent(site, { slug });
    const [, create] = await historyOf(first.id);
    const refused = await http()
      .post(`${CONTENTS}/${first.id}/restore`)
      .set('Cookie', site.cookie)
      .send({ revision: create!.id });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'SLUG_TAKEN', field: 'slug' });
    expect((await http().get(`${CONTENTS}/${first.id}`).set('Cookie', site.cookie)).status).toBe(404);
  });
});
