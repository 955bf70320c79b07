import Type from 'typebox';
import { DateTime } from '../../framework/entity/date-time.ts';
import { WithDefault } from '../../framework/entity/storage.ts';
import { Markdown } from '../../framework/markdown/markdown-field.ts';
import { Slug } from './slug.ts';
import type { FieldTexts } from '../../framework/entity/field-text.ts';
import { StringEnum } from '../../framework/entity/string-enum.ts';

export const TITLE_MAX = 200;
export const BODY_MAX = 200_000;

export const ContentStatus = StringEnum(['draft', 'published', 'archived'], {
  description: 'draft, published or archived; changed only by the publish, unpublish and archive commands.',
});

export const contentFields = {
  slug: Slug,
  title: Type.String({
    minLength: 1,
    maxLength: TITLE_MAX,
    description: `1–${TITLE_MAX} characters, counted as Unicode code points (an emoji is one, a combining mark one more).`,
  }),
  kind: StringEnum(['page', 'post']),
  body: Markdown({
    maxLength: BODY_MAX,
    description:
      `Markdown (GitHub-flavoured), at most ${BODY_MAX} characters, stored as written. HTML typed in a body is kept as text ` +
      'here and left out of the rendered page.',
  }),
  status: WithDefault(ContentStatus, 'draft'),
  publishedAt: Type.Optional(
    DateTime({
      description:
        'When it was published: set by publish (and not moved by a repeated one), cleared by unpublish; an archived item keeps it.',
    }),
  ),
  author: Type.String({
    format: 'uuid',
    description: 'The user who created it: always the caller, never taken from a body.',
  }),
};

export type ContentFields = typeof contentFields;

/** What an anonymous reader receives: no author, status or timestamps besides the publication time. */
export const PublicContent = Type.Object(
  {
    slug: Type.String(),
    title: Type.String(),
    kind: StringEnum(['page', 'post']),
    body: Type.String({ description: 'The Markdown rendered to HTML and sanitised (docs/content.md).' }),
    publishedAt: DateTime(),
  },
  { additionalProperties: false, title: 'Public content' },
);

/** What a person reads about each field in the admin shell (the descriptions above are the API's). */
export const contentFieldText: FieldTexts<keyof ContentFields & string> = {
  slug: {
    label: 'Slug',
    hint: 'The last part of the page’s public address, like about-us. Unique among this site’s pages.',
    messages: { pattern: 'Use lowercase letters, digits and single hyphens, like about-us.' },
  },
  title: { label: 'Title', hint: 'The heading readers see, up to 200 characters.' },
  kind: { label: 'Kind', hint: 'A page stays where it is; a post is dated news.' },
  body: {
    label: 'Text',
    hint: 'The page’s text, in Markdown: # for a heading, * for a list, [words](address) for a link.',
  },
  status: {
    label: 'Status',
    hint: 'Draft until published; published pages are public; archived pages are no longer shown.',
  },
  publishedAt: { label: 'Published', hint: 'When it was first published.' },
  author: {
    label: 'Author',
    hint: 'The person who created it, set when it was created.',
    messages: { format: 'Choose a person.', reference: 'Choose a person.' },
  },
};
