import Type from 'typebox';
import {
  ListFilters,
  cursorPager,
  apiRoute,
  registerAdminPage,
  renderTemplate,
  runApiRoute,
  type AdminPageContext,
  type AdminSite,
  FORM_TOKEN_FIELD,
} from '../../framework/admin/index.ts';
import { when } from '../../framework/format.ts';
import type { RouteDefinition } from '../../framework/entity/define.ts';
import type { Page } from '../../framework/operations/paging.ts';
import { StringEnum } from '../../framework/entity/string-enum.ts';
import { titleCase } from '../../framework/entity/names.ts';
import { notificationList } from './notification.routes.ts';

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

/** The page's own parameter besides the list's: what was just marked. */
const PageNotice = { marked: Type.Optional(StringEnum(['one', 'all'])) };
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
  // The list's filters as the API's: when it came, and the unread ones (readAt=is.null) in one click.
  const filters = new ListFilters({
    base: NOTIFICATIONS_PAGE,
    model: notificationList.model,
    fields: ['createdAt'],
    labelOf: (field) => (field === 'createdAt' ? 'Received' : field === 'readAt' ? 'Read' : titleCase(field)),
    presets: [{ label: 'Unread', query: { readAt: 'is.null' } }],
    defaultSort: '-createdAt',
    defaultLimit: PAGE_SIZE,
  });

  registerAdminPage(site, {
    path: NOTIFICATIONS_PAGE,
    access: list.access,
    summary: 'Notifications',
    schema: { querystring: filters.pageQuery(list.schema.querystring!, PageNotice) },
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
    const asked = filters.request(page);
    if (asked.changed) return page.redirect(asked.href);
    const after = asked.query.after;
    const query = { limit: PAGE_SIZE, offset: 0, ...asked.query };
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
      pager: cursorPager(asked.nextHref(found.next), { label: 'Older notifications' }),
      filters: await filters.form(page, asked.pairs, { label: 'Filter your notifications' }),
      firstPage: after === undefined,
      notice: marked === 'all' ? 'All your notifications are marked read.' : marked === 'one' ? 'Marked read.' : null,
      base: NOTIFICATIONS_PAGE,
      csrf: page.csrf(),
      csrfField: FORM_TOKEN_FIELD,
    });
    return page.render({ title: 'Notifications', body });
  }
}
