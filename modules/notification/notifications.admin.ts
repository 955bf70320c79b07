import Type from 'typebox';
import {
  apiRoute,
  registerAdminPage,
  renderTemplate,
  runApiRoute,
  type AdminPageContext,
  type AdminSite,
} from '../../framework/admin/index.ts';
import { FORM_TOKEN_FIELD } from '../../framework/access/form-token.ts';
import { when } from '../../framework/format.ts';
import type { RouteDefinition } from '../../framework/entity/define.ts';
import type { Page } from '../../framework/operations/paging.ts';
import { StringEnum } from '../../framework/entity/string-enum.ts';

export const NOTIFICATIONS_PAGE = '/admin/notification/notifications';
const PAGE_SIZE = 20;

interface NotificationItem {
  id: string;
  title: string;
  body: string;
  link: string;
  readAt: Date | string | null;
  createdAt: Date | string;
}

const ListQuery = Type.Object({
  after: Type.Optional(Type.String({ maxLength: 200 })),
  marked: Type.Optional(StringEnum(['one', 'all'])),
});
const IdParams = Type.Object({ id: Type.String({ maxLength: 100 }) });

/** A notification's link is a path within the application (the API guarantees it); anything else is not linked. */
const localLink = (link: string): string | null =>
  link.startsWith('/') && !link.startsWith('//') && !link.startsWith('/\\') ? link : null;

/**
 * The caller's notifications, where the header's badge leads: guarded like the API's
 * (signedIn) and read through GET /api/v1/notification/notifications, newest first, paged by its
 * cursor. Each unread one has a Mark read button (POST .../{id}/read), and the page one for all of
 * them (POST .../read); each posts its form and comes back here (with htmx, the list and the
 * badge are replaced in place).
 */
export function registerNotificationPages(site: AdminSite): void {
  const route = (operationId: string) => {
    const found = apiRoute(site.services, operationId) as RouteDefinition | undefined;
    if (!found) throw new Error(`the notification pages need the API route ${operationId}`);
    return found;
  };
  const list = route('notification-notification-list');
  const readOne = route('notification-notification-read');
  const readAll = route('notification-notification-read-all');

  registerAdminPage(site, {
    path: NOTIFICATIONS_PAGE,
    access: list.access,
    summary: 'Notifications',
    schema: { querystring: ListQuery },
    handler: (page) => renderList(page),
  });

  registerAdminPage(site, {
    method: 'POST',
    path: `${NOTIFICATIONS_PAGE}/:id/read`,
    access: readOne.access,
    summary: 'Mark a notification read',
    ...(readOne.publishes ? { publishes: readOne.publishes } : {}),
    schema: { params: IdParams },
    handler: async (page) => {
      await runApiRoute(readOne, page, { params: { id: page.params.id } });
      return page.redirect(`${NOTIFICATIONS_PAGE}?marked=one`);
    },
  });

  registerAdminPage(site, {
    method: 'POST',
    path: `${NOTIFICATIONS_PAGE}/read`,
    access: readAll.access,
    summary: 'Mark all notifications read',
    ...(readAll.publishes ? { publishes: readAll.publishes } : {}),
    handler: async (page) => {
      await runApiRoute(readAll, page);
      return page.redirect(`${NOTIFICATIONS_PAGE}?marked=all`);
    },
  });

  async function renderList(page: AdminPageContext): Promise<string> {
    const after = typeof page.query.after === 'string' ? page.query.after : undefined;
    const query = { limit: PAGE_SIZE, offset: 0, sort: '-createdAt', ...(after ? { after } : {}) };
    const found = (await runApiRoute(list, page, { query })) as Page<NotificationItem>;
    const marked = page.query.marked;
    const body = renderTemplate('./admin/pages/notifications', {
      items: found.items.map((item) => ({
        id: item.id,
        title: item.title,
        body: item.body,
        link: localLink(item.link),
        unread: item.readAt === null,
        at: when(item.createdAt),
      })),
      anyUnread: found.items.some((item) => item.readAt === null),
      nextHref: found.next ? `${NOTIFICATIONS_PAGE}?${new URLSearchParams({ after: found.next })}` : null,
      firstPage: after === undefined,
      notice: marked === 'all' ? 'All your notifications are marked read.' : marked === 'one' ? 'Marked read.' : null,
      base: NOTIFICATIONS_PAGE,
      csrf: page.csrf(),
      csrfField: FORM_TOKEN_FIELD,
    });
    return page.render({ title: 'Notifications', body });
  }
}
