import { defineEntity } from '../../framework/entity/define.ts';
import { contentFieldText, contentFields, PublicContent } from './content.fields.ts';
import { archive, publish, unpublish } from './content.commands.ts';
import { normaliseSlug } from './slug.ts';
import { renderMarkdown } from '../../framework/markdown/render.ts';

/**
 * Cache-Control of the public page: any cache may keep it but must ask again before each use,
 * which the weak ETag makes a cheap 304. An edit, an unpublish or an archive is seen at once.
 */
export const PUBLIC_CACHE_CONTROL = 'public, no-cache';

export const content = defineEntity({
  module: 'content',
  name: 'content',
  label: 'Content',
  description: 'Markdown pages and posts with a draft, published and archived lifecycle.',
  fields: contentFields,
  states: { field: 'status', refusal: 'INVALID_STATE' },
  commandOwned: { status: ['publish', 'unpublish', 'archive'], publishedAt: ['publish', 'unpublish'] },
  readOnly: ['author'],
  readOnlyReasons: { author: 'set from the caller (the signed-in user), never from the body' },
  normalise: { slug: normaliseSlug },
  invalidCodes: { slug: 'SLUG_INVALID' },
  uniqueCodes: { slug: { index: 'contents_slug_unique', code: 'SLUG_TAKEN' } },
  eventFields: ['slug'],
  permissions: { read: 'content:read', write: 'content:manage' },
  sortable: ['slug', 'title', 'publishedAt'],
  hooks: {
    // The author is the caller, always: create refuses the field, and this fills it in.
    async beforeWrite(ctx, { op }) {
      if (op === 'create' && ctx.actorId) return { author: ctx.actorId };
    },
  },
  commands: { publish, unpublish, archive },
  publicRead: {
    by: 'slug',
    summary: 'Read a published content item by its slug',
    description:
      "Anybody may read it at the tenant's host. The slug is normalised (NFKC, trimmed, lower-cased) before the lookup; outside the slug grammar it is " +
      '422 SLUG_INVALID. A draft, an archived item, a deleted item and an unused slug answer the same 404 NOT_FOUND, as does a host with no tenant. ' +
      'The body is the Markdown rendered and sanitised on every read. A weak ETag derives from updatedAt; an If-None-Match naming it is 304 with no body. ' +
      `Cache-Control: ${PUBLIC_CACHE_CONTROL}.`,
    where: { status: 'published' },
    schema: PublicContent,
    cacheControl: PUBLIC_CACHE_CONTROL,
    // Browsers read the same page as HTML at /p/<slug> (templates/content/public-page.eta, which templates.dir may replace).
    page: { path: '/p', template: 'content/public-page' },
    shape: (row) => ({
      slug: row.slug,
      title: row.title,
      kind: row.kind,
      body: renderMarkdown(row.body),
      publishedAt: row.publishedAt ?? row.updatedAt,
    }),
  },
  admin: {
    title: 'title',
    columns: ['title', 'slug', 'kind', 'status', 'publishedAt'],
    // People write pages and posts; "Content" (the API's label) made "Contents" and "1 content".
    label: 'Page or post',
    labelPlural: 'Pages and posts',
    references: { author: 'user.user' },
    fieldText: contentFieldText,
  },
});
