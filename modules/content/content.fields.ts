import Type from 'typebox';
import { DateTime } from '../../framework/entity/date-time.ts';
import { WithDefault } from '../../framework/entity/storage.ts';
import { Markdown } from '../../framework/markdown/markdown-field.ts';
import { Slug } from './slug.ts';

export const TITLE_MAX = 200;
export const BODY_MAX = 200_000;

export const ContentStatus = Type.Union([Type.Literal('draft'), Type.Literal('published'), Type.Literal('archived')], {
  description: 'draft, published or archived; changed only by the publish, unpublish and archive commands.',
});

export const contentFields = {
  slug: Slug,
  title: Type.String({ minLength: 1, maxLength: TITLE_MAX, description: `1–${TITLE_MAX} characters, counted as Unicode code points (an emoji is one, a combining mark one more).` }),
  kind: Type.Union([Type.Literal('page'), Type.Literal('post')]),
  body: Markdown({
    maxLength: BODY_MAX,
    description:
      `Markdown (GitHub-flavoured), at most ${BODY_MAX} characters, stored as written. HTML typed in a body is kept as text ` +
      'here and left out of the rendered page.',
  }),
  status: WithDefault(ContentStatus, 'draft'),
  publishedAt: Type.Optional(
    DateTime({ description: 'When it was published: set by publish (and not moved by a repeated one), cleared by unpublish; an archived item keeps it.' }),
  ),
  author: Type.String({ format: 'uuid', description: 'The user who created it: always the caller, never taken from a body.' }),
};

export type ContentFields = typeof contentFields;

/** What an anonymous reader receives: no author, status or timestamps besides the publication time. */
export const PublicContent = Type.Object(
  {
    slug: Type.String(),
    title: Type.String(),
    kind: Type.Union([Type.Literal('page'), Type.Literal('post')]),
    body: Type.String({ description: 'The Markdown rendered to HTML and sanitised (docs/content.md).' }),
    publishedAt: DateTime(),
  },
  { additionalProperties: false, title: 'Public content' },
);
