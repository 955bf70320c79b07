import { defineCommand } from '../../framework/entity/define.ts';
import { problem } from '../../framework/errors.ts';
import { contentFields } from './content.fields.ts';

/**
 * The three commands, exactly per the SPEC's state table (docs/content.md). Where the table says
 * "no change", run returns nothing: the framework writes nothing and nothing is published. Each
 * event carries the id and the slug, never the body.
 */
const command = defineCommand(contentFields);

export const publish = command({
  summary: 'Publish a content item',
  description:
    'draft → published, recording publishedAt and publishing content.published. Already published: no change (publishedAt does not move, no event). ' +
    'Archived: 409 INVALID_STATE (unpublish it first).',
  publishes: ['content.published'],
  async run(ctx, row) {
    if (row.status === 'published') return;
    if (row.status === 'archived') {
      throw problem('INVALID_STATE', 'An archived content item cannot be published: unpublish it first (POST /api/v1/content/contents/{id}/unpublish)', {
        extensions: { state: row.status },
      });
    }
    ctx.publish('content.published', { id: row.id, slug: row.slug });
    return { status: 'published', publishedAt: ctx.now };
  },
});

export const unpublish = command({
  summary: 'Unpublish a content item',
  description: 'published or archived → draft, clearing publishedAt and publishing content.unpublished. A draft: no change.',
  publishes: ['content.unpublished'],
  async run(ctx, row) {
    if (row.status === 'draft') return;
    ctx.publish('content.unpublished', { id: row.id, slug: row.slug });
    return { status: 'draft', publishedAt: null };
  },
});

export const archive = command({
  summary: 'Archive a content item',
  description:
    'draft or published → archived, publishing content.archived: kept, served to nobody (publishedAt is kept until an unpublish). Already archived: no change.',
  publishes: ['content.archived'],
  async run(ctx, row) {
    if (row.status === 'archived') return;
    ctx.publish('content.archived', { id: row.id, slug: row.slug });
    return { status: 'archived' };
  },
});
