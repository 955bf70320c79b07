import { randomBytes } from 'node:crypto';
import { sql, type Generated } from 'kysely';
import type { TxContext } from '../../framework/context/tx.ts';
import { hashSecret } from '../../framework/access/session-cookie.ts';

declare module '../../framework/db/types.ts' {
  interface Database {
    set_password_tokens: {
      id: Generated<string>;
      tenant_id: Generated<string>;
      user_id: string;
      token_hash: Buffer;
      created_at: Generated<Date>;
      sent_at: Generated<Date>;
      expires_at: Date | string;
      used_at: Date | string | null;
    };
  }
}

export type SetPasswordPurpose = 'invitation' | 'reset';

/**
 * How long a mailed link stays good. An invitation may sit in an inbox over a weekend; a reset
 * link is asked for by someone waiting for it, so a day is plenty and limits a leaked mailbox.
 */
export const TOKEN_LIFETIME_HOURS: Readonly<Record<SetPasswordPurpose, number>> = { invitation: 7 * 24, reset: 24 };

/**
 * Mints the person's one pending token, replacing any earlier pending one (whose link stops
 * working), and returns the raw token. The raw value is meant only for the mailed link: minting
 * is recorded as sending, which is what lastSentAt reports. Every time is the transaction's clock
 * reading, so expiry follows the clock the redemption compares with.
 */
export async function mintSetPasswordToken(ctx: TxContext, userId: string, purpose: SetPasswordPurpose = 'invitation'): Promise<string> {
  const raw = randomBytes(32).toString('base64url');
  const hours = TOKEN_LIFETIME_HOURS[purpose];
  await sql`
    insert into set_password_tokens (user_id, token_hash, created_at, sent_at, expires_at)
    values (${userId}, ${hashSecret(raw)}, ${ctx.now}, ${ctx.now}, ${ctx.now}::timestamptz + make_interval(hours => ${hours}))
    on conflict (tenant_id, user_id) where used_at is null
    do update set token_hash = excluded.token_hash, created_at = excluded.created_at, sent_at = excluded.sent_at, expires_at = excluded.expires_at`.execute(ctx.db);
  return raw;
}

/**
 * Spends a token: the user it was minted for, or undefined for an unknown, spent or expired one.
 * The row is marked used in the same statement, so two concurrent redemptions cannot both win.
 */
export async function redeemSetPasswordToken(ctx: TxContext, raw: string): Promise<{ userId: string } | undefined> {
  if (raw.length === 0 || raw.length > 200) return undefined;
  const { rows } = await sql<{ user_id: string }>`
    update set_password_tokens set used_at = ${ctx.now}
     where token_hash = ${hashSecret(raw)} and used_at is null and expires_at > ${ctx.now}
    returning user_id`.execute(ctx.db);
  const row = rows[0];
  return row ? { userId: row.user_id } : undefined;
}

/** When the person was last sent a link (pending or spent), or undefined if never. */
export async function lastSentAt(ctx: TxContext, userId: string): Promise<Date | undefined> {
  const { rows } = await sql<{ sent_at: Date | null }>`
    select max(sent_at) as sent_at from set_password_tokens where user_id = ${userId}`.execute(ctx.db);
  const value = rows[0]?.sent_at;
  return value ? new Date(value) : undefined;
}
