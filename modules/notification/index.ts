import { defineModule } from '../../framework/entity/define.ts';
import { unreadCount } from './unread.ts';
import { notificationRoutes, notificationStream } from './notification.routes.ts';
import { notificationMail } from './notification-mail.ts';
import './notifications-table.ts';
import { readAllRoute } from './read-all.route.ts';
import { NOTIFICATIONS_PAGE, registerNotificationPages } from './notifications.admin.ts';

/**
 * Per-person messages, optionally mailed. notify() (notify.ts) is the only writer; a person lists
 * their own and marks them read; the mail subscription sends the ones that ask for mail.
 */
export const notificationModule = defineModule({
  name: 'notification',
  description: 'Per-person messages, optionally mailed',
  events: ['notification.created', 'notification.email_requested', 'notification.read'],
  routes: [...notificationRoutes, readAllRoute],
  // GET /api/v1/notification/notifications/stream: the caller's own, live (framework/live).
  streams: [notificationStream],
  subscriptions: [notificationMail],
  // The admin header's badge: the caller's unread count, read in the page's own transaction.
  // The badge opens the caller's notifications (notifications.admin.ts); it is counted again, on
  // every page, when the caller's notifications change (their stream).
  adminBadge: {
    label: 'unread notifications',
    count: unreadCount,
    href: NOTIFICATIONS_PAGE,
    follows: notificationStream,
  },
  admin: {
    label: 'Notifications',
    resourcePages: false,
    pages: [registerNotificationPages],
  },
});
