import Type from 'typebox';
import { defineRoute, type AnyRoute } from '../../framework/entity/define.ts';
import { notModified } from '../../framework/http/etag.ts';
import { pageRendererFor } from '../../framework/http/page-templates.ts';
import { PUBLIC_NOT_FOUND_TEMPLATE, PUBLIC_PAGE_CSP } from '../../framework/http/public-page.ts';
import { toProblem } from '../../framework/http/problems.ts';
import { HtmlPage } from '../../framework/admin/index.ts';
import type { TxContext } from '../../framework/context/tx.ts';
import type { FastifyRequest } from 'fastify';
import { renderMarkdown } from '../../framework/markdown/render.ts';
import { PUBLIC_CACHE_CONTROL } from './content.entity.ts';
import {
  PublicContentPage,
  PublicListQuery,
  publicListETag,
  publishedItems,
  summaryOf,
  type ContentKindValue,
  type PublicListQueryValue,
} from './public-list.ts';
import { atomFeed } from './atom.ts';

/** Entries the Atom feed carries: the newest published items. */
export const FEED_ENTRIES = 50;
/** Items the index page shows at once; "Older" follows the list's cursor. */
export const INDEX_PAGE_SIZE = 20;

const notModifiedAnswer = Type.Null({ description: 'Not modified: the If-None-Match names the current ETag' });

/** The tenant's name, which the feed and the index page are titled with. */
async function siteName(tx: TxContext): Promise<string> {
  const row = await tx.db.selectFrom('tenants').select('name').where('id', '=', tx.tenant.id).executeTakeFirst();
  return row?.name ?? tx.tenant.slug;
}

const originOf = (request: FastifyRequest) => `${request.protocol}://${request.host}`;

/**
 * The public list of published pages and posts (issue 48, point 6): the JSON list for programs,
 * an Atom feed at /p/feed.xml and an index page at /p/ for people and feed readers. All three are
 * anonymous, at the tenant of the host, with the public page's rules: only published, live items;
 * bodies rendered and sanitised as the public page renders them (excerpts are their plain text);
 * a weak ETag with `Cache-Control: public, no-cache`, and 304 for an If-None-Match naming it.
 */
export const publicListRoutes: readonly AnyRoute[] = [
  defineRoute({
    method: 'GET',
    url: '/api/v1/content/public',
    operationId: 'content-content-public-list',
    summary: 'List the published pages and posts',
    description:
      "Anybody may read it at the tenant's host: the published, live items only (a draft, an archived or a deleted item is never listed), newest first by publication time, paged like every list (limit and offset, or after=<next>); kind=page or kind=post narrows it. " +
      'Each item carries its slug, title, kind, publishedAt and a plain-text excerpt of its body (rendered and sanitised as the public page, tags dropped). ' +
      `A weak ETag changes with any write to the tenant's pages and posts; an If-None-Match naming it is 304 with no body. Cache-Control: ${PUBLIC_CACHE_CONTROL}.`,
    tags: ['content'],
    access: 'public',
    // Published content may be seconds old: read from the replica when there is one within its bound.
    replica: 'always',
    schema: {
      querystring: PublicListQuery,
      response: { 200: PublicContentPage, 304: notModifiedAnswer },
    },
    handler: async ({ tx, query, request, reply }) => {
      reply.header('cache-control', PUBLIC_CACHE_CONTROL);
      if (notModified(request, reply, await publicListETag(tx, request, 'api'))) return undefined;
      const page = await publishedItems(tx, query as PublicListQueryValue);
      return { ...page, items: page.items.map(summaryOf) };
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/p/feed.xml',
    operationId: 'content-content-public-feed',
    summary: 'The Atom feed of the published pages and posts',
    tags: ['content'],
    access: 'public',
    // Published content may be seconds old: read from the replica when there is one within its bound.
    replica: 'always',
    hidden: true,
    hidesNoSite: true,
    schema: { response: { 200: HtmlPage('The Atom feed (application/atom+xml)'), 304: notModifiedAnswer } },
    handler: async ({ tx, request, reply }) => {
      reply.header('cache-control', PUBLIC_CACHE_CONTROL);
      if (notModified(request, reply, await publicListETag(tx, request, 'atom'))) return undefined;
      const page = await publishedItems(tx, { limit: FEED_ENTRIES, offset: 0, sort: '-publishedAt' });
      const items = page.items.map((item) => ({ ...item, body: renderMarkdown(item.body) }));
      reply.type('application/atom+xml; charset=utf-8');
      return atomFeed({ origin: originOf(request), name: await siteName(tx) }, items);
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/p',
    operationId: 'content-content-public-index',
    summary: 'The index page of the published pages and posts',
    tags: ['content'],
    access: 'public',
    // Published content may be seconds old: read from the replica when there is one within its bound.
    replica: 'always',
    hidden: true,
    hidesNoSite: true,
    schema: {
      // Anything else in the query is a page that is not there (404), never a problem document.
      querystring: Type.Object({ kind: Type.Optional(Type.String()), after: Type.Optional(Type.String()) }),
      response: { 200: HtmlPage('The index page'), 304: notModifiedAnswer },
    },
    handler: async ({ tx, query, request, reply, services }) => {
      const render = pageRendererFor(services.config);
      reply
        .type('text/html; charset=utf-8')
        .header('content-security-policy', PUBLIC_PAGE_CSP)
        .header('referrer-policy', 'strict-origin-when-cross-origin');
      const { kind, after } = query as { kind?: string; after?: string };
      const notFound = () => {
        reply.code(404).header('cache-control', 'no-store');
        return render(PUBLIC_NOT_FOUND_TEMPLATE, {});
      };
      if (kind !== undefined && kind !== 'page' && kind !== 'post') return notFound();
      reply.header('cache-control', PUBLIC_CACHE_CONTROL);
      if (notModified(request, reply, await publicListETag(tx, request, 'index'))) return undefined;
      const list: PublicListQueryValue = {
        limit: INDEX_PAGE_SIZE,
        offset: 0,
        sort: '-publishedAt',
        ...(kind ? { kind: kind as ContentKindValue } : {}),
        ...(after ? { after } : {}),
      };
      let page: Awaited<ReturnType<typeof publishedItems>>;
      try {
        page = await publishedItems(tx, list);
      } catch (err) {
        // A cursor this list did not give: no such page.
        if (toProblem(err).status === 422) return notFound();
        throw err;
      }
      const next = page.next
        ? `/p/?${new URLSearchParams({ ...(kind ? { kind } : {}), after: page.next }).toString()}`
        : null;
      return render('content/public-index', {
        site: { name: await siteName(tx) },
        kind: kind ?? null,
        items: page.items.map(summaryOf),
        next,
      });
    },
  }),
];
