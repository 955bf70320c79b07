import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTENTS, command, contentSite, createContent, type ContentSite } from './support.ts';
import { SettableClock } from '../../../framework/clock.ts';

/**
 * Issue 44: sort=-publishedAt lists the published items first, newest first, and the unpublished
 * (no publication time) last; rows without a value come last in both directions.
 */
const clock = new SettableClock();
let site: ContentSite;
const titles: Record<string, string> = {};

beforeAll(async () => {
  site = await contentSite('sorted', { clock });
  const start = Date.now();
  for (const [i, title] of ['draft one', 'published first', 'draft two', 'published last'].entries()) {
    const made = await createContent(site, { title });
    titles[made.id] = title;
    if (title.startsWith('published')) {
      clock.set(new Date(start + i * 60_000));
      expect((await command(site, made.id, 'publish')).status).toBe(200);
    }
  }
});
afterAll(async () => {
  await site?.app.close();
});

const order = async (sort: string) => {
  const res = await site.app.http(site.host).get(`${CONTENTS}?sort=${sort}`).set('Cookie', site.cookie);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.items.map((c: { title: string }) => c.title);
};

describe('sorting content by its publication time', () => {
  it('sort=-publishedAt puts the published first, newest first, and the unpublished last', async () => {
    expect(await order('-publishedAt,title')).toEqual(['published last', 'published first', 'draft one', 'draft two']);
  });

  it('sort=publishedAt puts them last too', async () => {
    expect(await order('publishedAt,title')).toEqual(['published first', 'published last', 'draft one', 'draft two']);
  });

  it('walks both orders with the cursor, the unpublished after the published', async () => {
    for (const sort of ['-publishedAt', 'publishedAt']) {
      const walked: string[] = [];
      let after: string | null = null;
      do {
        const res: { status: number; body: { items: { title: string }[]; next: string | null } } = await site.app
          .http(site.host)
          .get(`${CONTENTS}?sort=${sort}&limit=1${after ? `&after=${after}` : ''}`)
          .set('Cookie', site.cookie);
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        walked.push(...res.body.items.map((c: { title: string }) => c.title));
        after = res.body.next;
      } while (after);
      expect(
        walked.slice(0, 2).every((title) => title.startsWith('published')),
        sort,
      ).toBe(true);
      expect(walked.slice(2).sort(), sort).toEqual(['draft one', 'draft two']);
    }
  });
});
