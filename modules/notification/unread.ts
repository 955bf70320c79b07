import type { TxContext } from '../../framework/entity/define.ts';
import './notifications-table.ts';

/**
 * How many of the caller's notifications are unread: one count over the partial index of unread
 * rows (migration 0003), in the caller's transaction. No session: none.
 */
export async function unreadCount(tx: TxContext<never>): Promise<number> {
  if (!tx.session) return 0;
  const row = await tx.db
    .selectFrom('notifications')
    .select((eb) => eb.fn.countAll<string>().as('unread'))
    .where('recipient_id', '=', tx.session.userId)
    .where('read_at', 'is', null)
    .executeTakeFirst();
  return Number(row?.unread ?? 0);
}
