import type { PublicSummary } from './public-list.ts';

/** Escapes text for XML character data and attribute values. */
const xml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);

// Characters XML 1.0 does not allow at all (C0 controls but tab, newline and carriage return; U+FFFE, U+FFFF):
// a body may hold them, a feed may not.
const NOT_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g;
const text = (value: string): string => xml(value.replace(NOT_XML, ''));

export interface FeedSite {
  /** scheme://host of the request: every id and link of the feed is on it. */
  origin: string;
  /** The feed's title and author: the tenant's name. */
  name: string;
}

/**
 * An Atom 1.0 feed (RFC 4287) of published items, newest first: the feed's id, title, updated,
 * author and self and alternate links; each entry's id (its page's address), title, updated,
 * published, alternate link, summary (the plain excerpt) and content (the body as the public page
 * renders and sanitises it, escaped as type="html").
 */
export function atomFeed(site: FeedSite, items: readonly PublicSummary[]): string {
  const index = `${site.origin}/p/`;
  const updated = new Date(Math.max(0, ...items.map((item) => item.updatedAt.getTime())));
  const entries = items.map((item) => {
    const page = `${site.origin}/p/${encodeURIComponent(item.slug)}`;
    return [
      '  <entry>',
      `    <id>${text(page)}</id>`,
      `    <title type="text">${text(item.title)}</title>`,
      `    <updated>${item.updatedAt.toISOString()}</updated>`,
      `    <published>${item.publishedAt.toISOString()}</published>`,
      `    <link rel="alternate" type="text/html" href="${text(page)}"/>`,
      `    <category term="${item.kind}"/>`,
      `    <summary type="text">${text(item.excerpt)}</summary>`,
      `    <content type="html">${text(item.body)}</content>`,
      '  </entry>',
    ].join('\n');
  });
  return [
    '<?xml version="1.0" encoding="utf-8"?>',
    '<feed xmlns="http://www.w3.org/2005/Atom">',
    `  <id>${text(index)}</id>`,
    `  <title type="text">${text(site.name)}</title>`,
    `  <updated>${updated.toISOString()}</updated>`,
    `  <author><name>${text(site.name)}</name></author>`,
    `  <link rel="self" type="application/atom+xml" href="${text(`${site.origin}/p/feed.xml`)}"/>`,
    `  <link rel="alternate" type="text/html" href="${text(index)}"/>`,
    ...entries,
    '</feed>',
    '',
  ].join('\n');
}
