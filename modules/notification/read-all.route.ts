import Type from 'typebox';
import { defineRoute } from '../../framework/entity/define.ts';
import { answer } from '../../framework/http/entity-route-parts.ts';
import './notifications-table.ts';

/**
 * POST /api/v1/notification/notifications/read: marks every unread notification of the caller
 * read, in one statement, with the clock's time; publishes notification.read for each one it
 * marked (as marking them one by one would), and answers how many. Nothing unread: 0, nothing
 * published. Like mark-one, it touches the caller's own notifications only.
 */
export const readAllRoute = defineRoute({
  method: 'POST',
  url: '/api/v1/notification/notifications/read',
  operationId: 'notification-notification-read-all',
  summary: 'Mark all my notifications read',
  description:
    'Sets readAt to now on every one of the caller’s unread notifications and publishes notification.read for each (the same event as marking one). ' +
    'Answers how many were marked; notifications already read keep their readAt. Nobody else’s notifications are touched.',
  tags: ['notification'],
  access: 'signedIn',
  publishes: ['notification.read'],
  schema: {
    response: {
      200: answer(
        Type.Object(
          { marked: Type.Integer({ minimum: 0, description: 'How many were unread and are read now.' }) },
          { additionalProperties: false, title: 'NotificationsMarked' },
        ),
        'How many of the caller’s notifications were marked read',
      ),
    },
  },
  handler: async ({ tx }) => {
    const recipientId = tx.session!.userId;
    const marked = await tx.db
      .updateTable('notifications')
      .set({ read_at: tx.now })
      .where('recipient_id', '=', recipientId)
      .where('read_at', 'is', null)
      .returning('id')
      .execute();
    for (const row of marked) tx.publish('notification.read', { id: row.id, recipientId });
    return { marked: marked.length };
  },
});
