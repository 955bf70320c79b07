import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { command, contentSite, createContent, outbox, storedRow, type ContentSite } from './support.ts';

/** SPEC, States and transitions → Content: one test per row of the table. */
let site: ContentSite;

beforeAll(async () => {
  site = await contentSite('states');
});
afterAll(async () => {
  await site?.app.close();
});

type Status = 'draft' | 'published' | 'archived';

/** A content item brought into the state through the commands themselves. */
async function inState(status: Status): Promise<{ id: string; slug: string }> {
  const row = await createContent(site);
  if (status === 'published') expect((await command(site, row.id, 'publish')).status).toBe(200);
  if (status === 'archived') expect((await command(site, row.id, 'archive')).status).toBe(200);
  return row;
}

/** Runs a command and reports the answer, the stored row before and after, and the events it published. */
async function transition(id: string, name: 'publish' | 'unpublish' | 'archive') {
  const before = await storedRow(site, id);
  const seen = (await outbox(site)).length;
  const res = await command(site, id, name);
  return { res, before, after: await storedRow(site, id), events: (await outbox(site)).slice(seen) };
}

describe('content state table (SPEC States → Content)', () => {
  it('draft + publish → published: publishedAt recorded, content.published with id and slug, the row returned', async () => {
    const row = await inState('draft');
    const { res, before, after, events } = await transition(row.id, 'publish');
    expect(before.published_at).toBeNull();
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ id: row.id, status: 'published', slug: row.slug });
    expect(after.status).toBe('published');
    expect(after.published_at).toBeInstanceOf(Date);
    expect(res.body.publishedAt).toBe((after.published_at as Date).toISOString());
    expect(events).toEqual([{ name: 'content.published', payload: { id: row.id, slug: row.slug } }]);
  });

  it('published + publish → published: no change, publishedAt does not move, no write and no event', async () => {
    const row = await inState('published');
    const { res, before, after, events } = await transition(row.id, 'publish');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('published');
    expect(after).toEqual(before);
    expect(res.body.publishedAt).toBe((before.published_at as Date).toISOString());
    expect(events).toEqual([]);
  });

  it('archived + publish → refused with 409 INVALID_STATE (unpublish first), nothing written or published', async () => {
    const row = await inState('archived');
    const { res, before, after, events } = await transition(row.id, 'publish');
    expect(res.status).toBe(409);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.code).toBe('INVALID_STATE');
    expect(res.body.detail).toContain('unpublish');
    expect(after).toEqual(before);
    expect(events).toEqual([]);
  });

  it('published + unpublish → draft: publishedAt cleared, content.unpublished', async () => {
    const row = await inState('published');
    const { res, after, events } = await transition(row.id, 'unpublish');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'draft', publishedAt: null });
    expect(after).toMatchObject({ status: 'draft', published_at: null });
    expect(events).toEqual([{ name: 'content.unpublished', payload: { id: row.id, slug: row.slug } }]);
  });

  it('archived + unpublish → draft: publishedAt cleared, content.unpublished', async () => {
    const row = await inState('published');
    expect((await command(site, row.id, 'archive')).status).toBe(200);
    expect((await storedRow(site, row.id)).published_at).toBeInstanceOf(Date);
    const { res, after, events } = await transition(row.id, 'unpublish');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'draft', publishedAt: null });
    expect(after).toMatchObject({ status: 'draft', published_at: null });
    expect(events).toEqual([{ name: 'content.unpublished', payload: { id: row.id, slug: row.slug } }]);
  });

  it('draft + unpublish → draft: no change, no write and no event', async () => {
    const row = await inState('draft');
    const { res, before, after, events } = await transition(row.id, 'unpublish');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('draft');
    expect(after).toEqual(before);
    expect(events).toEqual([]);
  });

  it('any non-archived state + archive → archived (kept, served to nobody), content.archived', async () => {
    for (const status of ['draft', 'published'] as const) {
      const row = await inState(status);
      const { res, before, after, events } = await transition(row.id, 'archive');
      expect(res.status, status).toBe(200);
      expect(res.body.status).toBe('archived');
      expect(after.status).toBe('archived');
      expect(after.deleted_at, 'kept').toBeNull();
      // The publication time stays with an archived item until an unpublish clears it.
      expect(after.published_at).toEqual(before.published_at);
      expect(events).toEqual([{ name: 'content.archived', payload: { id: row.id, slug: row.slug } }]);
      const page = await site.app.http(site.host).get(`/api/v1/content/public/${row.slug}`);
      expect(page.status, 'served to nobody').toBe(404);
    }
  });

  it('archived + archive → archived: no change, no write and no event', async () => {
    const row = await inState('archived');
    const { res, before, after, events } = await transition(row.id, 'archive');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('archived');
    expect(after).toEqual(before);
    expect(events).toEqual([]);
  });

  it('publishedAt is set once: a publish after an unpublish records a new time, a repeated publish never moves it', async () => {
    const row = await inState('published');
    const first = (await storedRow(site, row.id)).published_at as Date;
    for (let i = 0; i < 3; i++)
      expect((await command(site, row.id, 'publish')).body.publishedAt).toBe(first.toISOString());
    expect((await storedRow(site, row.id)).published_at).toEqual(first);
  });
});

describe('the database keeps status and publishedAt consistent (CHECK constraint)', () => {
  it('refuses a published row without publishedAt and a draft with one', async () => {
    const row = await inState('draft');
    const update = (sql: string) =>
      site.app.services.transactions.run(site.tenant, (ctx) =>
        ctx.db.executeQuery({ sql, parameters: [row.id], query: { kind: 'RawNode' } } as never),
      );
    await expect(update(`update contents set status = 'published' where id = $1`)).rejects.toMatchObject({
      code: '23514',
      constraint: 'contents_published_at_matches_status',
    });
    await expect(update(`update contents set published_at = now() where id = $1`)).rejects.toMatchObject({
      code: '23514',
      constraint: 'contents_published_at_matches_status',
    });
    expect(await storedRow(site, row.id)).toMatchObject({ status: 'draft', published_at: null });
  });
});
