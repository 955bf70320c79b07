import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTENTS, PUBLIC, command, contentSite, createContent, uniqueSlug, type ContentSite } from './support.ts';
import { PUBLIC_CACHE_CONTROL } from '../../../modules/content/content.entity.ts';
import { testConfig } from '../../helpers/config.ts';

// Issue 35, point 6: browsers read a published content at /p/<slug> as HTML, with the ETag and
// 304 of the JSON read; anything not published is a plain 404 page; the template can be replaced.

let site: ContentSite;
let custom: ContentSite;

beforeAll(async () => {
  site = await contentSite('html-page');
  const dir = mkdtempSync(join(tmpdir(), 'tenantry-templates-'));
  mkdirSync(join(dir, 'content'));
  writeFileSync(
    join(dir, 'content', 'public-page.eta'),
    '<!doctype html><title><%= it.page.title %></title><p class="installation">Our own layout</p><%~ it.page.body %>',
  );
  // testConfig takes the sections it knows; the validated config gains the templates directory.
  custom = await contentSite('html-page-own', { config: { ...testConfig(), templates: { dir } } });
});
afterAll(async () => {
  await site?.app.close();
  await custom?.app.close();
});

async function published(on: ContentSite, values: Record<string, unknown> = {}) {
  const row = await createContent(on, values);
  expect((await command(on, row.id, 'publish')).status).toBe(200);
  return row;
}

const page = (on: ContentSite, slug: string) => on.app.http(on.host).get(`/p/${encodeURIComponent(slug)}`);

describe('GET /p/<slug>: the published content as an HTML page', () => {
  it('answers HTML with the title and the Markdown rendered and sanitised, with a content security policy', async () => {
    const row = await published(site, {
      title: 'About <us>',
      body: '# Welcome\n\nSome **bold** text.\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1))',
    });
    const res = await page(site, row.slug);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.text).toContain('<title>About &lt;us&gt;</title>');
    expect(res.text).toContain('<h1>Welcome</h1>');
    expect(res.text).toContain('<strong>bold</strong>');
    expect(res.text).not.toContain('<script');
    expect(res.text).not.toContain('javascript:');
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });

  it('carries the JSON read’s ETag and Cache-Control, and answers an If-None-Match naming it 304 with no body', async () => {
    const row = await published(site);
    const json = await site.app.http(site.host).get(`${PUBLIC}/${row.slug}`);
    const html = await page(site, row.slug);
    expect(html.status).toBe(200);
    expect(html.headers.etag).toMatch(/^W\/"/);
    expect(html.headers.etag).toBe(json.headers.etag);
    expect(html.headers['cache-control']).toBe(PUBLIC_CACHE_CONTROL);
    const again = await page(site, row.slug).set('If-None-Match', html.headers.etag!);
    expect(again.status).toBe(304);
    expect(again.text ?? '').toBe('');
    expect(again.headers.etag).toBe(html.headers.etag);
    // A stale tag gets the page again.
    const stale = await page(site, row.slug).set('If-None-Match', 'W/"stale"');
    expect(stale.status).toBe(200);
    // An edit makes a new tag on both doors.
    expect(
      (
        await site.app
          .http(site.host)
          .patch(`${CONTENTS}/${row.id}`)
          .set('Cookie', site.cookie)
          .send({ title: 'Edited' })
      ).status,
    ).toBe(200);
    const edited = await page(site, row.slug).set('If-None-Match', html.headers.etag!);
    expect(edited.status).toBe(200);
    expect(edited.text).toContain('Edited');
    expect(edited.headers.etag).not.toBe(html.headers.etag);
    expect(edited.headers.etag).toBe((await site.app.http(site.host).get(`${PUBLIC}/${row.slug}`)).headers.etag);
  });

  it('answers a draft, an unpublished, an archived, a deleted and an unknown slug with the same plain 404 page', async () => {
    const draft = await createContent(site);
    const unpublished = await published(site);
    expect((await command(site, unpublished.id, 'unpublish')).status).toBe(200);
    const archived = await published(site);
    expect((await command(site, archived.id, 'archive')).status).toBe(200);
    const deleted = await published(site);
    expect((await site.app.http(site.host).delete(`${CONTENTS}/${deleted.id}`).set('Cookie', site.cookie)).status).toBe(
      204,
    );
    const bodies = new Set<string>();
    for (const slug of [
      draft.slug,
      unpublished.slug,
      archived.slug,
      deleted.slug,
      uniqueSlug('never'),
      'Not A Slug!',
    ]) {
      const res = await page(site, slug);
      expect(res.status, slug).toBe(404);
      expect(res.headers['content-type'], slug).toBe('text/html; charset=utf-8');
      expect(res.text, slug).toContain('Page not found');
      expect(res.headers.etag, slug).toBeUndefined();
      bodies.add(res.text);
    }
    expect(bodies.size).toBe(1);
    // The JSON read stays JSON.
    const json = await site.app.http(site.host).get(`${PUBLIC}/${draft.slug}`);
    expect(json.headers['content-type']).toMatch(/^application\/problem\+json/);
  });

  it('is not an API route: OpenAPI does not list it', async () => {
    const doc = await site.app.http(site.host).get('/api/v1/openapi.json');
    expect(doc.status).toBe(200);
    expect(Object.keys(doc.body.paths).filter((path) => path.startsWith('/p/'))).toEqual([]);
    expect(doc.body.paths['/api/v1/content/public/{slug}']).toBeDefined();
  });
});

describe('templates.dir: an installation’s own template replaces the shipped one', () => {
  it('renders /p/<slug> with <dir>/content/public-page.eta, escaping what it asks escaped', async () => {
    const row = await published(custom, { title: 'Ours & theirs', body: 'Hello *there*' });
    const res = await page(custom, row.slug);
    expect(res.status).toBe(200);
    expect(res.text).toContain('<p class="installation">Our own layout</p>');
    expect(res.text).toContain('<title>Ours &amp; theirs</title>');
    expect(res.text).toContain('<em>there</em>');
    // The shipped not-found page stays where the installation has none.
    expect((await page(custom, uniqueSlug('none'))).text).toContain('Page not found');
  });
});
