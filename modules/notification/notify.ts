import { sql } from 'kysely';
import type { TxContext } from '../../framework/context/tx.ts';
import { problem } from '../../framework/errors.ts';

/** What a module hands to notify(). */
export interface Notice {
  recipientId: string;
  /** One line. */
  title: string;
  body: string;
  /** A path within the application (e.g. /auth/reset), never an absolute URL; empty for none. */
  link: string;
}

/** True for an in-application path: one leading slash, no scheme, no host. */
export function isAppPath(link: string): boolean {
  return link === '' || (link.startsWith('/') && !link.startsWith('//') && !link.includes('\\') && !/[\r\n]/.test(link));
}

/**
 * Writes a notification for a person of the transaction's tenant and publishes
 * notification.created (identifiers only). The only writer of the notifications table.
 */
export async function notify(ctx: TxContext, notice: Notice): Promise<{ id: string }> {
  const title = notice.title.trim();
  if (title === '' || /[\r\n]/.test(title)) throw problem('INTERNAL', 'a notification title is one non-empty line');
  if (!isAppPath(notice.link)) throw problem('INTERNAL', `a notification link is a path within the application, not ${notice.link}`);
  const { rows } = await sql<{ id: string }>`
    insert into notifications (recipient_id, title, body, link)
    values (${notice.recipientId}, ${title}, ${notice.body}, ${notice.link})
    returning id`.execute(ctx.db);
  const id = rows[0]!.id;
  ctx.publish('notification.created', { id, recipientId: notice.recipientId });
  return { id };
}
