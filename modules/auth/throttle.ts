import type { TxContext } from '../../framework/entity/define.ts';
import type { Db } from '../../framework/db/pool.ts';
import { hashSecret } from '../../framework/access/session-cookie.ts';
import { problem } from '../../framework/errors.ts';
import type { AttemptKind } from './auth-tables.ts';
import './auth-tables.ts';

export type { AttemptKind } from './auth-tables.ts';

/**
 * Sliding windows, counted per client address in PostgreSQL so every replica shares them.
 * login: failed logins (the SPEC's 10 per 15 minutes). forgot and reset: every request, 10 and 20
 * per hour; an hour is long enough to make guessing or mail-bombing pointless and short enough
 * that a person behind a busy shared address is not shut out for the day.
 */
export const THROTTLE: Readonly<Record<AttemptKind, { max: number; windowMinutes: number }>> = {
  login: { max: 10, windowMinutes: 15 },
  forgot: { max: 10, windowMinutes: 60 },
  reset: { max: 20, windowMinutes: 60 },
};

/** An account whose failed logins in the login window came from more sources than this is slowed down. */
export const SOFT_DELAY_SOURCES = 3;
export const SOFT_DELAY_MS = 2000;

/** The longest window: rows older than this count for nothing and the sweep purges them. */
export const LONGEST_WINDOW_MINUTES = Math.max(...Object.values(THROTTLE).map((t) => t.windowMinutes));

/** Failed logins are keyed by a digest of the lower-cased address, so the table holds no address. */
export const accountKey = (email: string): Buffer => hashSecret(`login:${email.trim().toLowerCase()}`);

// Windows slide on the transaction's clock reading, which also stamps every attempt: a clock moved
// forward past a window finds it empty. The window's start is computed here and sent as a parameter.
const windowStart = (ctx: TxContext, kind: AttemptKind): Date =>
  new Date(ctx.now.getTime() - THROTTLE[kind].windowMinutes * 60_000);

export async function recordAttempt(
  ctx: TxContext,
  kind: AttemptKind,
  source: string,
  account?: Buffer,
): Promise<void> {
  await ctx.db
    .insertInto('auth_attempts')
    .values({ kind, source, account: account ?? null, at: ctx.now })
    .execute();
}

export async function attemptsFrom(ctx: TxContext, kind: AttemptKind, source: string): Promise<number> {
  const row = await ctx.db
    .selectFrom('auth_attempts')
    .select((eb) => eb.cast<number>(eb.fn.countAll(), 'integer').as('n'))
    .where('kind', '=', kind)
    .where('source', '=', source)
    .where('at', '>', windowStart(ctx, kind))
    .executeTakeFirst();
  return row?.n ?? 0;
}

/**
 * Counts a forgot or reset request of this client address, or refuses it with 429 RATE_LIMITED
 * once the window is full. The caller decides in which transaction the count is kept.
 */
export async function takeSlot(ctx: TxContext, kind: 'forgot' | 'reset', source: string): Promise<void> {
  // Serialise one address's requests so two replicas cannot both take the last slot.
  await ctx.db
    .selectNoFrom((eb) =>
      eb
        .fn('pg_advisory_xact_lock', [
          eb.fn('hashtextextended', [eb.val(`${ctx.tenant.id}:${kind}:${source}`), eb.lit(0)]),
        ])
        .as('locked'),
    )
    .execute();
  if ((await attemptsFrom(ctx, kind, source)) >= THROTTLE[kind].max) {
    throw problem('RATE_LIMITED', `Too many requests from this address; try again later`, {
      extensions: { retryAfterSeconds: THROTTLE[kind].windowMinutes * 60 },
    });
  }
  await recordAttempt(ctx, kind, source);
}

export interface LoginPressure {
  /** Failed logins from this client address in the window. */
  failuresFromSource: number;
  /** Distinct client addresses that failed to sign in to this account in the window. */
  sourcesOnAccount: number;
}

/** One round trip: both numbers login needs before it decides to refuse, slow down or proceed. */
export async function loginPressure(ctx: TxContext, source: string, account: Buffer): Promise<LoginPressure> {
  const since = windowStart(ctx, 'login');
  const row = await ctx.db
    .selectNoFrom((eb) => [
      eb
        .selectFrom('auth_attempts')
        .select((sub) => sub.cast<number>(sub.fn.countAll(), 'integer').as('n'))
        .where('kind', '=', 'login')
        .where('source', '=', source)
        .where('at', '>', since)
        .as('fromSource'),
      eb
        .selectFrom('auth_attempts')
        .select((sub) => sub.cast<number>(sub.fn.count('source').distinct(), 'integer').as('n'))
        .where('kind', '=', 'login')
        .where('account', '=', account)
        .where('at', '>', since)
        .as('onAccount'),
    ])
    .executeTakeFirst();
  return { failuresFromSource: row?.fromSource ?? 0, sourcesOnAccount: row?.onAccount ?? 0 };
}

/** Deletes counted attempts older than every window as of `now`, for all tenants at once (runs as the owner). */
export async function purgeAttempts(db: Db, now: Date): Promise<number> {
  const oldest = new Date(now.getTime() - LONGEST_WINDOW_MINUTES * 60_000);
  const result = await db.kysely.deleteFrom('auth_attempts').where('at', '<', oldest).executeTakeFirstOrThrow();
  return Number(result.numDeletedRows);
}
