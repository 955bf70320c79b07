import type { SubscriptionDefinition } from '../../framework/entity/define.ts';
import { isUuid } from '../../framework/operations/entity-ops.ts';
import { tenantUrl } from '../../framework/tenancy/tenant-url.ts';
import { usersService } from '../user/users-service.ts';
import './notifications-table.ts';

/**
 * The mail a notification asks for, in plain text: the title, the body, and the link made
 * absolute on the tenant's primary host (https unless that host is a local name).
 */
export function renderNotificationMail(notice: { title: string; body: string }, url: string): string {
  return [notice.title, '', ...(notice.body ? [notice.body, ''] : []), url, ''].join('\n');
}

/**
 * On notification.email_requested: reads the notification back in the event's tenant transaction,
 * resolves the recipient's address and the tenant's host, and hands a plain-text message to the
 * mailer. A notification (or recipient) gone in between is skipped. A mailer that fails throws, so
 * the delivery is retried and at last dead-lettered; the event id is recorded only on success.
 */
export const notificationMail: SubscriptionDefinition = {
  name: 'notification-email',
  event: 'notification.email_requested',
  async handle(ctx, event, services) {
    const id = typeof event.payload.id === 'string' ? event.payload.id : '';
    if (!isUuid(id)) return;
    const notice = await ctx.db
      .selectFrom('notifications')
      .select(['title', 'body', 'link', 'recipient_id'])
      .where('id', '=', id)
      .executeTakeFirst();
    if (!notice) return;
    const recipient = await usersService.findById(ctx, notice.recipient_id);
    if (!recipient?.email) return;
    const url = await tenantUrl(ctx, services, notice.link);
    await services.mailer.send({
      to: recipient.email,
      subject: notice.title,
      text: renderNotificationMail(notice, url),
    });
  },
};
