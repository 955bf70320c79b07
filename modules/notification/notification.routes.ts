import Type from 'typebox';
import { defineRoute, type AnyRoute, type LiveListDefinition } from '../../framework/entity/define.ts';
import { notFound } from '../../framework/errors.ts';
import { isUuid } from '../../framework/operations/entity-ops.ts';
import { pageSchema } from '../../framework/operations/paging.ts';
import { QueryList } from '../../framework/query/query-list.ts';
import type { TxContext } from '../../framework/entity/define.ts';
import './notifications-table.ts';
import { answer } from '../../framework/http/entity-route-parts.ts';

const BASE = '/api/v1/notification/notifications';
const tags = ['notification'];

export const Notification = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    title: Type.String({ description: 'One line.' }),
    body: Type.String(),
    link: Type.String({ description: 'A path within the application, never an absolute URL.' }),
    readAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'Empty until read; written only by the mark-read operation.',
    }),
    createdAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false, title: 'Notification' },
);

const COLUMNS = 'id, title, body, link, read_at as "readAt", created_at as "createdAt"';

/**
 * The caller's own notifications, through the query language like every list (readAt=is.null for
 * the unread ones): the recipient condition is the route's own, beside any the query adds, so no
 * filter reaches another person's rows. The page is read from the (tenant_id, recipient_id,
 * created_at, id) index in either direction.
 */
/** The caller's own notifications: what their list and its export hold. */
const mine = (tx: TxContext) => ({ conditions: ['recipient_id = $1'], params: [callerOf(tx)] });

export const notificationList = new QueryList({
  label: 'notifications',
  item: Notification,
  select: COLUMNS,
  from: 'notifications',
  columns: {
    id: 'id',
    title: 'title',
    body: 'body',
    link: 'link',
    readAt: 'read_at',
    createdAt: 'created_at',
  },
  indexed: ['createdAt'],
  defaultSort: '-createdAt',
  sortDescription: 'Newest first (-createdAt) unless sort asks for another order.',
});

const IdParams = Type.Object({ id: Type.String({ description: 'Notification id (UUID)' }) });

/** The signed-in caller: these routes are guarded signedIn, so a session is always there. */
const callerOf = (tx: TxContext): string => tx.session!.userId;

/** Reads one of the caller's own; undefined for an unknown id and for somebody else's alike. */
async function ownNotification(tx: TxContext, id: string) {
  return tx.db
    .selectFrom('notifications')
    .select(['id', 'title', 'body', 'link', 'read_at as readAt', 'created_at as createdAt'])
    .where('id', '=', id)
    .where('recipient_id', '=', callerOf(tx))
    .executeTakeFirst();
}

export const notificationRoutes: readonly AnyRoute[] = [
  defineRoute({
    method: 'GET',
    url: BASE,
    operationId: 'notification-notification-list',
    summary: 'List my notifications',
    description:
      'The caller’s own notifications, newest first by default. Filtered, sorted and paged like every list (readAt=is.null: the unread ones; docs/api-conventions.md, "Filters"): limit and offset, or after=<next> from the previous page; total counted up to 10000. Nobody lists another person’s notifications, whatever the filter.',
    tags,
    access: 'signedIn',
    schema: {
      querystring: notificationList.querySchema,
      response: { 200: pageSchema(Notification, 'A page of the caller’s notifications') },
    },
    exports: notificationList.exports('notifications', (tx) => mine(tx)),
    handler: ({ tx, query, reply }) => notificationList.answer(tx, query, reply, mine(tx)),
  }),
  defineRoute({
    method: 'POST',
    url: `${BASE}/:id/read`,
    operationId: 'notification-notification-read',
    summary: 'Mark one of my notifications read',
    description:
      'Sets readAt to now and publishes notification.read, once: marking a read notification again changes nothing, publishes nothing and answers it as it is. Somebody else’s notification answers 404 NOT_FOUND, like an unknown id. The only operation that writes readAt.',
    tags,
    access: 'signedIn',
    publishes: ['notification.read'],
    schema: { params: IdParams, response: { 200: answer(Notification, 'The notification, marked read') } },
    handler: async ({ tx, params }) => {
      if (!isUuid(params.id)) throw notFound();
      // The condition on read_at makes the first mark the only one that writes, also when two race.
      const marked = await tx.db
        .updateTable('notifications')
        .set({ read_at: tx.now })
        .where('id', '=', params.id)
        .where('recipient_id', '=', callerOf(tx))
        .where('read_at', 'is', null)
        .returning(['id', 'title', 'body', 'link', 'read_at as readAt', 'created_at as createdAt'])
        .executeTakeFirst();
      if (marked) {
        tx.publish('notification.read', { id: marked.id, recipientId: callerOf(tx) });
        return marked;
      }
      const row = await ownNotification(tx, params.id);
      if (!row) throw notFound();
      return row;
    },
  }),
];

/**
 * The caller's own notifications, followed live (docs/api-conventions.md, "Live changes"): a new
 * one arrives as created, one marked read as updated (as removed on a stream of the unread ones,
 * readAt=is.null: the list's own filters); nobody's stream names another person's.
 */
export const notificationStream: LiveListDefinition = {
  path: BASE,
  operationId: 'notification-notification-stream',
  label: 'your notifications',
  tags,
  access: 'signedIn',
  item: Notification,
  table: 'notifications',
  columns: { id: 'id', title: 'title', body: 'body', link: 'link', readAt: 'read_at', createdAt: 'created_at' },
  owner: 'recipient_id',
  events: { 'notification.created': 'created', 'notification.read': 'updated' },
  query: notificationList,
};
