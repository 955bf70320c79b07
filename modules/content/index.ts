import { defineModule, entity } from '../../framework/entity/define.ts';
import { content } from './content.entity.ts';
import { publicListRoutes } from './public-list.routes.ts';
import { contentProblems } from './problems.ts';

/** Markdown pages and posts, their lifecycle, and the public page by slug (docs/content.md). */
export const contentModule = defineModule({
  name: 'content',
  description: 'Pages and posts in Markdown with a draft, published, archived lifecycle',
  problems: contentProblems,
  permissions: [
    { name: 'content:read', description: 'List and read pages and posts; the Pages and posts navigation entry' },
    {
      name: 'content:manage',
      description: 'Create, change and delete pages and posts; publish, unpublish and archive them',
    },
  ],
  events: ['content.published', 'content.unpublished', 'content.archived'],
  entities: [entity(content)],
  // The public list, its Atom feed (/p/feed.xml) and index page (/p/): public-list.routes.ts.
  routes: publicListRoutes,
  admin: {
    label: 'Pages and posts',
    sidebar: [{ label: 'Pages and posts', path: '/admin/content/contents', order: 30 }],
  },
});
