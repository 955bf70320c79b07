import { randomBytes } from 'node:crypto';
import type { TxContext } from '../../framework/entity/define.ts';
import { hashSecret } from '../../framework/access/session-cookie.ts';
import './auth-tables.ts';

export type SetPasswordPurpose = 'invitation' | 'reset';

/**
 * How long a mailed link stays good. An invitation may sit in an inbox over a weekend; a reset
 * link is asked for by someone waiting for it, so a day is plenty and limits a leaked mailbox.
 */
export const TOKEN_LIFETIME_HOURS: Readonly<Record<SetPasswordPurpose, number>> = { invitation: 7 * 24, reset: 24 };

/** When a token minted at `now` for this purpose stops working: what the token stores and its mail says. */
export const tokenExpiry = (now: Date, purpose: SetPasswordPurpose): Date =>
  new Date(now.getTime() + TOKEN_LIFETIME_HOURS[purpose] * 3_600_000);

/**
 * Mints the person's one pending token, replacing any earlier pending one (whose link stops
 * working), and returns the raw token. The raw value is meant only for the mailed link: minting
 * is recorded as sending, which is what lastSentAt reports. Every time is the transaction's clock
 * reading, so expiry follows the clock the redemption compares with.
 */
export async function mintSetPasswordToken(
  ctx: TxContext,
  userId: string,
  purpose: SetPasswordPurpose = 'invitation',
): Promise<string> {
  const raw = randomBytes(32).toString('base64url');
  await ctx.db
    .insertInto('set_password_tokens')
    .values({
      user_id: userId,
      token_hash: hashSecret(raw),
      created_at: ctx.now,
      sent_at: ctx.now,
      expires_at: tokenExpiry(ctx.now, purpose),
    })
    // The target is the partial unique index of pending tokens, named by its columns and predicate.
    .onConflict((oc) =>
      oc
        .columns(['tenant_id', 'user_id'])
        .where('used_at', 'is', null)
        .doUpdateSet((eb) => ({
          token_hash: eb.ref('excluded.token_hash'),
          created_at: eb.ref('excluded.created_at'),
          sent_at: eb.ref('excluded.sent_at'),
          expires_at: eb.ref('excluded.expires_at'),
        })),
    )
    .execute();
  return raw;
}

/**
 * Spends a token: the user it was minted for, or undefined for an unknown, spent or expired one.
 * The row is marked used in the same statement, so two concurrent redemptions cannot both win.
 */
export async function redeemSetPasswordToken(ctx: TxContext, raw: string): Promise<{ userId: string } | undefined> {
  if (raw.length === 0 || raw.length > 200) return undefined;
  const row = await ctx.db
    .updateTable('set_password_tokens')
    .set({ used_at: ctx.now })
    .where('token_hash', '=', hashSecret(raw))
    .where('used_at', 'is', null)
    .where('expires_at', '>', ctx.now)
    .returning('user_id')
    .executeTakeFirst();
  return row ? { userId: row.user_id } : undefined;
}

/** When the person was last sent a link (pending or spent), or undefined if never. */
export async function lastSentAt(ctx: TxContext, userId: string): Promise<Date | undefined> {
  const row = await ctx.db
    .selectFrom('set_password_tokens')
    .select((eb) => eb.fn.max('sent_at').as('sent_at'))
    .where('user_id', '=', userId)
    .executeTakeFirst();
  const value = row?.sent_at;
  return value ? new Date(value) : undefined;
}
