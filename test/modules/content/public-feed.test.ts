import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDocument, DomUtils } from 'htmlparser2';
import type { Element } from 'domhandler';
import { PUBLIC, command, contentSite, createContent, uniqueSlug, type ContentSite } from './support.ts';
import { PUBLIC_CACHE_CONTROL } from '../../../modules/content/content.entity.ts';
import { createCustomer, signInAs } from '../../helpers/app.ts';

// Issue 48, point 6: the published items of the host's tenant as a JSON list, an Atom feed at
// /p/feed.xml and an index page at /p/, with the public page's sanitisation and ETag rules.

let site: ContentSite;
let otherHost: string;
const items: Record<string, { id: string; slug: string }> = {};

async function published(on: ContentSite, values: Record<string, unknown>) {
  const row = await createContent(on, values);
  expect((await command(on, row.id, 'publish')).status).toBe(200);
  return row;
}

beforeAll(async () => {
  site = await contentSite('feed');
  items.page = await published(site, { title: 'About us', kind: 'page', body: 'We are **here** & there.' });
  items.post = await published(site, {
    title: 'First <post>',
    kind: 'post',
    body: `# News\n\nHello <script>alert(1)</script> [x](javascript:alert(1)) world.\n\n${'word '.repeat(100)}`,
  });
  items.draft = await createContent(site, { title: 'A draft', kind: 'post', slug: uniqueSlug('draft') });
  items.archived = await published(site, { title: 'Archived one', kind: 'post' });
  expect((await command(site, items.archived.id, 'archive')).status).toBe(200);
  // Another tenant's published item is never listed here.
  otherHost = 'feed-other.localhost';
  const other = await createCustomer(site.app, 'feed-other', otherHost);
  const { cookie } = await signInAs(site.app, other, ['content:read', 'content:manage']);
  await published({ ...site, tenant: other, host: otherHost, cookie }, { title: 'Elsewhere', kind: 'post' });
});
afterAll(async () => {
  await site?.app.close();
});

const get = (path: string, headers: Record<string, string> = {}) => {
  const req = site.app.http(site.host).get(path);
  for (const [name, value] of Object.entries(headers)) req.set(name, value);
  return req;
};

describe('GET /api/v1/content/public', () => {
  it('lists the published items only, newest first, with slug, title, kind, publishedAt and a plain excerpt', async () => {
    const res = await get(PUBLIC);
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe(PUBLIC_CACHE_CONTROL);
    expect(res.body.items.map((i: { title: string }) => i.title)).toEqual(['First <post>', 'About us']);
    const [post, page] = res.body.items;
    expect(Object.keys(post).sort()).toEqual(['excerpt', 'kind', 'publishedAt', 'slug', 'title']);
    expect(page.excerpt).toBe('We are here & there.');
    // Sanitised as the page renders it: no script (nor its content, as the page leaves it out), no
    // javascript: link, no markup (the tags of inline HTML are left out; the text between them is only text).
    expect(post.excerpt).toMatch(/^News Hello x world\. word word/);
    expect(post.excerpt).not.toMatch(/script|javascript|</);
    expect([...post.excerpt].length).toBeLessThanOrEqual(200);
    expect(post.excerpt.endsWith('…')).toBe(true);
    expect(res.body.total).toBe(2);
  });

  it('takes the kind filter, and pages with limit and after', async () => {
    const posts = await get(`${PUBLIC}?kind=post`);
    expect(posts.body.items.map((i: { slug: string }) => i.slug)).toEqual([items.post!.slug]);
    const first = await get(`${PUBLIC}?limit=1`);
    expect(first.body.items).toHaveLength(1);
    expect(first.body.next).toEqual(expect.any(String));
    const second = await get(`${PUBLIC}?limit=1&after=${first.body.next}`);
    expect(second.body.items.map((i: { slug: string }) => i.slug)).toEqual([items.page!.slug]);
    expect((await get(`${PUBLIC}?kind=news`)).status).toBe(422);
  });

  it('answers 304 to a current If-None-Match, and a new ETag once an item changes', async () => {
    const first = await get(PUBLIC);
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^W\//);
    const again = await get(PUBLIC, { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    const extra = await published(site, { title: 'Later', kind: 'page' });
    const changed = await get(PUBLIC, { 'if-none-match': etag });
    expect(changed.status).toBe(200);
    expect(changed.headers.etag).not.toBe(etag);
    expect(changed.body.items[0].slug).toBe(extra.slug);
    expect((await command(site, extra.id, 'unpublish')).status).toBe(200);
    const after = await get(PUBLIC, { 'if-none-match': changed.headers.etag as string });
    expect(after.status).toBe(200);
    expect(after.body.items.map((i: { slug: string }) => i.slug)).not.toContain(extra.slug);
  });
});

/** The element children of a node, by local name. */
const children = (node: Element, name: string): Element[] =>
  node.children.filter((c): c is Element => c.type === 'tag' && c.name === name);
const one = (node: Element, name: string): Element => {
  const found = children(node, name);
  expect(found, `exactly one <${name}> in <${node.name}>`).toHaveLength(1);
  return found[0]!;
};
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

describe('GET /p/feed.xml', () => {
  it('is an Atom feed with every element RFC 4287 requires', async () => {
    const res = await get('/p/feed.xml');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/atom+xml; charset=utf-8');
    const xml = res.text;
    expect(xml.startsWith('<?xml version="1.0" encoding="utf-8"?>')).toBe(true);
    const doc = parseDocument(xml, { xmlMode: true });
    const roots = doc.children.filter((c): c is Element => c.type === 'tag');
    expect(roots).toHaveLength(1);
    const feed = roots[0]!;
    expect(feed.name).toBe('feed');
    expect(feed.attribs.xmlns).toBe('http://www.w3.org/2005/Atom');
    // RFC 4287 4.1.1: atom:feed contains exactly one id, title and updated; an author unless every entry has one.
    expect(DomUtils.textContent(one(feed, 'id'))).toMatch(/^http:\/\/feed\.localhost(:\d+)?\/p\/$/);
    expect(DomUtils.textContent(one(feed, 'title'))).toBe('Customer feed');
    expect(DomUtils.textContent(one(feed, 'updated'))).toMatch(RFC3339);
    expect(DomUtils.textContent(one(one(feed, 'author'), 'name'))).toBe('Customer feed');
    // At most one self link, which names the feed.
    const self = children(feed, 'link').filter((l) => l.attribs.rel === 'self');
    expect(self).toHaveLength(1);
    expect(self[0]!.attribs.href).toMatch(/\/p\/feed\.xml$/);
    const entries = children(feed, 'entry');
    expect(entries.length).toBe(2);
    for (const entry of entries) {
      // 4.1.2: exactly one id (an IRI), title and updated; a content or an alternate link.
      expect(DomUtils.textContent(one(entry, 'id'))).toMatch(/^http:\/\/feed\.localhost(:\d+)?\/p\/[a-z0-9-]+$/);
      expect(DomUtils.textContent(one(entry, 'title')).length).toBeGreaterThan(0);
      expect(DomUtils.textContent(one(entry, 'updated'))).toMatch(RFC3339);
      expect(DomUtils.textContent(one(entry, 'published'))).toMatch(RFC3339);
      const alternate = children(entry, 'link').filter((l) => l.attribs.rel === 'alternate');
      expect(alternate).toHaveLength(1);
      expect(one(entry, 'content').attribs.type).toBe('html');
      expect(one(entry, 'summary').attribs.type).toBe('text');
    }
    const titles = entries.map((e) => DomUtils.textContent(one(e, 'title')));
    expect(titles).toEqual(['First <post>', 'About us']);
    // The content is the sanitised rendering, escaped once: no script survives, decoded or not.
    const content = DomUtils.textContent(one(entries[0]!, 'content'));
    expect(content).toContain('<h1>News</h1>');
    expect(content).not.toMatch(/<script|javascript:/);
    expect(xml).not.toContain('Elsewhere');
  });

  it('has the public page’s ETag rules', async () => {
    const first = await get('/p/feed.xml');
    expect(first.headers['cache-control']).toBe(PUBLIC_CACHE_CONTROL);
    const again = await get('/p/feed.xml', { 'if-none-match': first.headers.etag as string });
    expect(again.status).toBe(304);
  });
});

describe('GET /p/: the index page', () => {
  it('lists the published items with links, escaped, under the public page’s policy, and takes kind', async () => {
    const res = await get('/p/');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['content-security-policy']).toMatch(/default-src 'none'/);
    expect(res.text).toContain(`href="/p/${items.post!.slug}"`);
    expect(res.text).toContain('First &lt;post&gt;');
    expect(res.text).not.toContain('<script>');
    expect(res.text).not.toContain('A draft');
    expect(res.text).toContain('href="/p/feed.xml"');
    const pages = await get('/p/?kind=page');
    expect(pages.text).toContain(`href="/p/${items.page!.slug}"`);
    expect(pages.text).not.toContain(`href="/p/${items.post!.slug}"`);
    expect((await get('/p/?kind=news')).status).toBe(404);
    const etag = res.headers.etag as string;
    expect((await get('/p/', { 'if-none-match': etag })).status).toBe(304);
    // The page by slug is still served beside it.
    expect((await get(`/p/${items.page!.slug}`)).status).toBe(200);
  });
});
