import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTENTS, PUBLIC, command, contentSite, createContent, uniqueSlug, type ContentSite } from './support.ts';
import { PUBLIC_CACHE_CONTROL } from '../../../modules/content/content.entity.ts';
import { withoutRequestId } from '../../helpers/problems.ts';

let site: ContentSite;

beforeAll(async () => {
  site = await contentSite('public');
});
afterAll(async () => {
  await site?.app.close();
});

const anonymous = (host = site.host) => site.app.http(host);

async function published(values: Record<string, unknown> = {}) {
  const row = await createContent(site, values);
  expect((await command(site, row.id, 'publish')).status).toBe(200);
  return row;
}

describe('GET /api/v1/content/public/{slug}', () => {
  it('answers anybody { slug, title, kind, body (rendered HTML), publishedAt } and nothing else', async () => {
    const row = await published({ title: 'Hello', kind: 'post', body: '# Heading\n\nSome **bold** text.' });
    const res = await anonymous().get(`${PUBLIC}/${row.slug}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['body', 'kind', 'publishedAt', 'slug', 'title']);
    expect(res.body).toMatchObject({ slug: row.slug, title: 'Hello', kind: 'post' });
    expect(res.body.body).toBe('<h1>Heading</h1>\n<p>Some <strong>bold</strong> text.</p>\n');
    const stored = await site.app.services.db.pool.query('select published_at from contents where id = $1', [row.id]);
    expect(res.body.publishedAt).toBe(stored.rows[0].published_at.toISOString());
  });

  it('looks the slug up normalised: capitals, full-width letters and surrounding spaces find the same page', async () => {
    const row = await published({ slug: uniqueSlug('lookup') });
    for (const spelling of [row.slug.toUpperCase(), ` ${row.slug} `, row.slug.replace('lookup', 'ｌｏｏｋｕｐ')]) {
      const res = await anonymous().get(`${PUBLIC}/${encodeURIComponent(spelling)}`);
      expect(res.status, spelling).toBe(200);
      expect(res.body.slug).toBe(row.slug);
    }
  });

  it('a draft, an archived item, a deleted item and an unused slug give the same 404 problem', async () => {
    const draft = await createContent(site);
    const archived = await published();
    expect((await command(site, archived.id, 'archive')).status).toBe(200);
    const deleted = await published();
    expect((await site.app.http(site.host).delete(`${CONTENTS}/${deleted.id}`).set('Cookie', site.cookie)).status).toBe(
      204,
    );
    const unused = await anonymous().get(`${PUBLIC}/never-used-${Date.now()}`);
    expect(unused.status).toBe(404);
    expect(unused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(unused.body.code).toBe('NOT_FOUND');
    for (const [what, slug] of [
      ['draft', draft.slug],
      ['archived', archived.slug],
      ['deleted', deleted.slug],
    ]) {
      const res = await anonymous().get(`${PUBLIC}/${slug}`);
      expect(res.status, what).toBe(404);
      expect(res.headers['content-type'], what).toBe(unused.headers['content-type']);
      expect(withoutRequestId(res.body), what).toEqual(withoutRequestId(unused.body));
      expect(res.headers.etag, what).toBeUndefined();
    }
  });

  it('a host with no tenant gives 404', async () => {
    const row = await published();
    const res = await anonymous('nobody-lives-here.localhost').get(`${PUBLIC}/${row.slug}`);
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.code).toBe('NO_SITE');
  });

  it('a slug outside the grammar gives 422 SLUG_INVALID', async () => {
    for (const slug of ['has space', 'under_score', '-x', 'x--y', 'ü', 'a.b']) {
      const res = await anonymous().get(`${PUBLIC}/${encodeURIComponent(slug)}`);
      expect(res.status, slug).toBe(422);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.code, slug).toBe('SLUG_INVALID');
    }
  });

  it('carries a weak ETag from updatedAt; If-None-Match naming it is 304 with no body; an edit changes it', async () => {
    const row = await published();
    const first = await anonymous().get(`${PUBLIC}/${row.slug}`);
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^W\/"[^"]+"$/);
    expect(first.headers['cache-control']).toBe(PUBLIC_CACHE_CONTROL);
    const again = await anonymous().get(`${PUBLIC}/${row.slug}`).set('If-None-Match', etag);
    expect(again.status).toBe(304);
    expect(again.text ?? '').toBe('');
    expect(again.headers['content-length'] ?? '0').toBe('0');
    expect(again.headers.etag).toBe(etag);
    expect(again.headers['cache-control']).toBe(PUBLIC_CACHE_CONTROL);
    // A list naming it, and the strong spelling, match too (weak comparison).
    expect(
      (
        await anonymous()
          .get(`${PUBLIC}/${row.slug}`)
          .set('If-None-Match', `W/"other", ${etag.slice(2)}`)
      ).status,
    ).toBe(304);
    expect((await anonymous().get(`${PUBLIC}/${row.slug}`).set('If-None-Match', 'W/"stale"')).status).toBe(200);
    // updatedAt moves with an edit, and so does the tag.
    expect(
      (
        await site.app
          .http(site.host)
          .patch(`${CONTENTS}/${row.id}`)
          .set('Cookie', site.cookie)
          .send({ title: 'Edited' })
      ).status,
    ).toBe(200);
    const edited = await anonymous().get(`${PUBLIC}/${row.slug}`).set('If-None-Match', etag);
    expect(edited.status).toBe(200);
    expect(edited.body.title).toBe('Edited');
    expect(edited.headers.etag).not.toBe(etag);
    const { rows } = await site.app.services.db.pool.query<{ updated_at: Date }>(
      'select updated_at from contents where id = $1',
      [row.id],
    );
    expect(edited.headers.etag).toBe(`W/"${rows[0]!.updated_at.getTime().toString(36)}"`);
  });

  it('renders on every read: GFM, raw HTML left out, protocol-relative links rewritten to https, links rel="nofollow ugc noopener"', async () => {
    const body = [
      '| a | b |',
      '|---|---|',
      '| 1 | ~~2~~ |',
      '',
      '<div onclick="x()">raw</div>',
      '',
      'A [link](//evil.example/x) and <b>inline</b> html, https://auto.example/y',
    ].join('\n');
    const row = await published({ body });
    const res = await anonymous().get(`${PUBLIC}/${row.slug}`);
    expect(res.status).toBe(200);
    const html = res.body.body as string;
    expect(html).toContain('<table>');
    expect(html).toContain('<del>2</del>');
    expect(html).not.toContain('raw');
    expect(html).not.toContain('<b>');
    expect(html).toContain('<a href="https://evil.example/x" rel="nofollow ugc noopener">link</a>');
    expect(html).toContain('<a href="https://auto.example/y" rel="nofollow ugc noopener">https://auto.example/y</a>');
  });
});
