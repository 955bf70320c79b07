import { defineCommand } from '../../framework/entity/define.ts';
import { contentFields } from './content.fields.ts';

/**
 * The three commands, exactly per the SPEC's state table (docs/content.md), declared as each
 * command's `states`: where the table says "no change" the state is `unchanged` and the framework
 * answers the row as it is without running the command (nothing written, nothing published). Each
 * event carries the id and the slug, never the body.
 */
const command = defineCommand(contentFields);

export const publish = command({
  summary: 'Publish a content item',
  admin: { label: 'Publish', intro: 'Makes it public at its address.' },
  description:
    'draft → published, recording publishedAt and publishing content.published. Already published: no change (publishedAt does not move, no event). ' +
    'Archived: 409 INVALID_STATE (unpublish it first).',
  // Archived is refused (409 INVALID_STATE, the entity's refusal) before run, by the declared states.
  states: { from: ['draft'], unchanged: ['published'], hint: 'It can be unpublished, then published again.' },
  publishes: ['content.published'],
  async run(ctx, row) {
    ctx.publish('content.published', { id: row.id, slug: row.slug });
    return { status: 'published', publishedAt: ctx.now };
  },
});

export const unpublish = command({
  summary: 'Unpublish a content item',
  admin: { label: 'Unpublish', intro: 'Takes it off the public site and makes it a draft again.' },
  description:
    'published or archived → draft, clearing publishedAt and publishing content.unpublished. A draft: no change.',
  states: { from: ['published', 'archived'], unchanged: ['draft'] },
  publishes: ['content.unpublished'],
  async run(ctx, row) {
    ctx.publish('content.unpublished', { id: row.id, slug: row.slug });
    return { status: 'draft', publishedAt: null };
  },
});

export const archive = command({
  summary: 'Archive a content item',
  admin: {
    label: 'Archive',
    intro: 'Takes it off the public site and keeps it aside. It can be published again later.',
  },
  description:
    'draft or published → archived, publishing content.archived: kept, served to nobody (publishedAt is kept until an unpublish). Already archived: no change.',
  states: { from: ['draft', 'published'], unchanged: ['archived'] },
  publishes: ['content.archived'],
  async run(ctx, row) {
    ctx.publish('content.archived', { id: row.id, slug: row.slug });
    return { status: 'archived' };
  },
});
