import { defineModule, entity } from '../../framework/entity/define.ts';
import { content } from './content.entity.ts';
import { contentProblems } from './problems.ts';

/** Markdown pages and posts, their lifecycle, and the public page by slug (docs/content.md). */
export const contentModule = defineModule({
  name: 'content',
  description: 'Pages and posts in Markdown with a draft, published, archived lifecycle',
  problems: contentProblems,
  permissions: [
    { name: 'content:read', description: 'List and read contents; the Content navigation entry' },
    { name: 'content:manage', description: 'Create, update and delete contents; publish, unpublish and archive them' },
  ],
  events: ['content.published', 'content.unpublished', 'content.archived'],
  entities: [entity(content)],
  admin: { sidebar: [{ label: 'Content', path: '/admin/content/contents', order: 30 }] },
});
