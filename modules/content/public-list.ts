import Type from 'typebox';
import { StringEnum } from '../../framework/entity/string-enum.ts';
import type { FastifyRequest } from 'fastify';
import type { TxContext } from '../../framework/context/tx.ts';
import {
  KeysetPager,
  pageQuerySchema,
  pageSchema,
  type Page,
  type PageQuery,
} from '../../framework/operations/paging.ts';
import { DateTime } from '../../framework/entity/date-time.ts';
import { named } from '../../framework/openapi/schema-name.ts';
import { weakETag } from '../../framework/http/etag.ts';
import { excerptOf } from './excerpt.ts';
import './contents-table.ts';

export const ContentKind = StringEnum(['page', 'post']);
export type ContentKindValue = 'page' | 'post';

/** One published item as the public list, the feed and the index page show it: never its author or status. */
export const PublicContentSummary = named(
  Type.Object(
    {
      slug: Type.String({ description: 'Its address: /p/<slug>, and the public read /api/v1/content/public/{slug}' }),
      title: Type.String(),
      kind: ContentKind,
      publishedAt: DateTime(),
      excerpt: Type.String({
        description:
          'The start of its text, plain (no markup): the body rendered and sanitised as the public page shows it, tags dropped, cut at a word before 200 characters with an ellipsis.',
      }),
    },
    { additionalProperties: false },
  ),
  'PublicContentSummary',
);

export interface PublicSummary {
  slug: string;
  title: string;
  kind: ContentKindValue;
  publishedAt: Date;
  excerpt: string;
  /** When the item last changed (the feed's entry `updated`); not in the JSON list. */
  updatedAt: Date;
  /** The sanitised HTML of its body (the feed's entry content); not in the JSON list. */
  body: string;
}

/** The published, live items of the transaction's tenant, newest first by publication time. */
const publishedPages = new KeysetPager({
  select: 'slug, title, kind, body, published_at, updated_at',
  from: 'contents',
  id: 'id',
  where: ["status = 'published'", 'deleted_at is null'],
  sorts: { publishedAt: { column: 'published_at' } },
});

const base = pageQuerySchema({
  sorts: ['publishedAt'],
  defaultSort: '-publishedAt',
  sortDescription: 'Newest first (-publishedAt) unless sort=publishedAt asks for oldest first. Ties break on id.',
});

export const PublicListQuery = Type.Object(
  {
    ...base.properties,
    kind: Type.Optional(StringEnum(['page', 'post'], { description: 'Only pages, or only posts' })),
  },
  { additionalProperties: false },
);

export type PublicListQueryValue = PageQuery & { kind?: ContentKindValue };

export const PublicContentPage = pageSchema(PublicContentSummary, 'A page of published pages and posts');

/** A page of the tenant's published items, with the kind filter when asked. */
export async function publishedItems(tx: TxContext, query: PublicListQueryValue): Promise<Page<PublicSummary>> {
  const filter = query.kind ? { conditions: ['kind = $1'], params: [query.kind] } : undefined;
  const page = await publishedPages.page(tx, query, filter);
  return {
    ...page,
    items: page.items.map((row) => {
      const body = String(row.body);
      return {
        slug: String(row.slug),
        title: String(row.title),
        kind: row.kind as ContentKindValue,
        publishedAt: row.published_at as Date,
        updatedAt: row.updated_at as Date,
        excerpt: excerptOf(body),
        body,
      };
    }),
  };
}

/** The JSON list's item: the summary without what only the feed carries. */
export const summaryOf = ({ slug, title, kind, publishedAt, excerpt }: PublicSummary) => ({
  slug,
  title,
  kind,
  publishedAt,
  excerpt,
});

/**
 * What the tenant's public list looks like now, as a weak ETag of this answer: the latest change
 * among its live items (a write moves it: an edit, a publish, an unpublish, an archive) and how
 * many are published (a delete lowers it), with what else shapes the answer (which door, the query,
 * the host its links name). One statement; the page itself is read only when the ETag is not current.
 */
export async function publicListETag(tx: TxContext, request: FastifyRequest, door: string): Promise<string> {
  const row = await tx.db
    .selectFrom('contents')
    .select((eb) => [
      eb.fn.max('updated_at').as('latest'),
      eb.fn.countAll<string>().filterWhere('status', '=', 'published').as('published'),
    ])
    .where('deleted_at', 'is', null)
    .executeTakeFirstOrThrow();
  const latest = row.latest ? new Date(row.latest as Date).getTime() : 0;
  return weakETag(`${door}\n${request.host}\n${request.url}\n${latest}\n${row.published}`);
}
