import { sql } from 'kysely';
import type { TxContext } from '../../framework/context/tx.ts';
import type { Db } from '../../framework/db/pool.ts';
import { hashSecret } from '../../framework/access/session-cookie.ts';
import { problem } from '../../framework/errors.ts';

export type AttemptKind = 'login' | 'forgot' | 'reset';

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
// forward past a window finds it empty.
const window = (ctx: TxContext, kind: AttemptKind) => sql`${ctx.now}::timestamptz - make_interval(mins => ${THROTTLE[kind].windowMinutes})`;

export async function recordAttempt(ctx: TxContext, kind: AttemptKind, source: string, account?: Buffer): Promise<void> {
  await sql`insert into auth_attempts (kind, source, account, at) values (${kind}, ${source}, ${account ?? null}, ${ctx.now})`.execute(ctx.db);
}

export async function attemptsFrom(ctx: TxContext, kind: AttemptKind, source: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from auth_attempts
     where kind = ${kind} and source = ${source} and at > ${window(ctx, kind)}`.execute(ctx.db);
  return rows[0]?.n ?? 0;
}

/**
 * Counts a forgot or reset request of this client address, or refuses it with 429 RATE_LIMITED
 * once the window is full. The caller decides in which transaction the count is kept.
 */
export async function takeSlot(ctx: TxContext, kind: 'forgot' | 'reset', source: string): Promise<void> {
  // Serialise one address's requests so two replicas cannot both take the last slot.
  await sql`select pg_advisory_xact_lock(hashtextextended(${`${ctx.tenant.id}:${kind}:${source}`}, 0))`.execute(ctx.db);
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
  const { rows } = await sql<{ from_source: number; on_account: number }>`
    select (select count(*)::int from auth_attempts
             where kind = 'login' and source = ${source} and at > ${window(ctx, 'login')}) as from_source,
           (select count(distinct source)::int from auth_attempts
             where kind = 'login' and account = ${account} and at > ${window(ctx, 'login')}) as on_account`.execute(ctx.db);
  return { failuresFromSource: rows[0]?.from_source ?? 0, sourcesOnAccount: rows[0]?.on_account ?? 0 };
}

/** Deletes counted attempts older than every window as of `now`, for all tenants at once (runs as the owner). */
export async function purgeAttempts(db: Db, now: Date): Promise<number> {
  const result = await db.pool.query(`delete from auth_attempts where at < $2::timestamptz - make_interval(mins => $1)`, [LONGEST_WINDOW_MINUTES, now]);
  return result.rowCount ?? 0;
}
