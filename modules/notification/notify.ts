import type { TxContext } from '../../framework/entity/define.ts';
import { problem } from '../../framework/errors.ts';
import { isUuid } from '../../framework/operations/entity-ops.ts';
import { usersService } from '../user/users-service.ts';
import './notifications-table.ts';

/** The longest title a notification carries (one line). */
export const TITLE_MAX = 200;

/** What a module hands to notify(). */
export interface Notice {
  /** A user of the transaction's tenant; not checked against the users table (no foreign key). */
  recipientId: string;
  /** One line, 1 to 200 characters. */
  title: string;
  body: string;
  /** A path within the application (e.g. /auth/reset): starts with one slash, no scheme, no host. */
  link: string;
  /** Asks for a mail besides the in-app notice: a request, sent only when the recipient has an address. */
  email: boolean;
}

/**
 * True for a path within the application: a leading slash that is not two (a scheme-relative
 * URL names a host), no backslash (browsers read it as a slash), no line break, no scheme.
 */
export function isAppPath(link: string): boolean {
  return (
    link.startsWith('/') &&
    !link.startsWith('//') &&
    !link.includes('\\') &&
    !/[\r\n\t]/.test(link) &&
    !/^\/*[a-z][a-z0-9+.-]*:/i.test(link)
  );
}

const refused = (pointer: string, message: string) =>
  problem('VALIDATION_FAILED', message, { errors: [{ pointer, message }] });

/**
 * Writes a notification for a person of the transaction's tenant and publishes
 * notification.created (identifiers only); with `email`, and when the recipient has an address,
 * also notification.email_requested, which the mail subscription answers after commit. The only
 * writer of the notifications table.
 */
export async function notify(ctx: TxContext, notice: Notice): Promise<{ id: string }> {
  if (!isUuid(notice.recipientId)) throw refused('/recipientId', 'a notification recipient is a user id');
  const title = notice.title.trim();
  if (title === '' || /[\r\n]/.test(title) || title.length > TITLE_MAX) {
    throw refused('/title', `a notification title is one line of 1 to ${TITLE_MAX} characters`);
  }
  if (!isAppPath(notice.link))
    throw refused('/link', `a notification link is a path within the application, not ${JSON.stringify(notice.link)}`);
  const row = await ctx.db
    .insertInto('notifications')
    .values({ recipient_id: notice.recipientId, title, body: notice.body, link: notice.link })
    .returning('id')
    .executeTakeFirstOrThrow();
  ctx.publish('notification.created', { id: row.id, recipientId: notice.recipientId });
  if (notice.email) {
    const recipient = await usersService.findById(ctx, notice.recipientId);
    if (recipient?.email) {
      ctx.publish('notification.email_requested', {
        id: row.id,
        recipientId: notice.recipientId,
        requestedAt: ctx.now.toISOString(),
      });
    }
  }
  return { id: row.id };
}
