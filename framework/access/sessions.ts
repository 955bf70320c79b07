import type { FastifyReply, FastifyRequest } from 'fastify';
import { CompiledQuery } from 'kysely';
import type { SessionInfo, TxContext } from '../context/tx.ts';
import type { Config } from '../config/schema.ts';
import { hashSecret, newSessionId, sessionCookie } from './session-cookie.ts';

/** A session lasts this long after its last use (the expiry slides, see framework/context/tx.ts)… */
export const SESSION_LIFETIME_DAYS = 30;
/** …and never longer than this after it opened. */
export const SESSION_MAX_DAYS = 90;

// sessions is the framework's identity table (migrations/framework/0013_identity.sql): it opens,
// resolves (context/opening.ts), touches, ends and sweeps them; a module calls these functions.

/**
 * Opens a session for a user of the transaction's tenant: a fresh 256-bit id every time, only its
 * SHA-256 stored, user agent and address recorded once. Login and single sign-on both use this.
 * Its times come from the transaction's clock reading, so its lifetime counts from the same clock
 * the opening statement compares expiry with.
 */
export async function openSession(
  ctx: TxContext,
  userId: string,
  request: Pick<FastifyRequest, 'headers' | 'ip'>,
): Promise<string> {
  const rawId = newSessionId();
  await ctx.db.executeQuery(
    CompiledQuery.raw(
      `insert into sessions (id_hash, user_id, created_at, last_seen_at, expires_at, user_agent, ip)
       values ($1, $2, $5, $5, $5::timestamptz + interval '${SESSION_LIFETIME_DAYS} days', $3, $4)`,
      [hashSecret(rawId), userId, String(request.headers['user-agent'] ?? '').slice(0, 500), request.ip ?? '', ctx.now],
    ),
  );
  return rawId;
}

/**
 * Sets the session cookie. Its Max-Age is the session's server-side lifetime: a session just
 * opened has SESSION_LIFETIME_DAYS; a renewed one what its slid expiry leaves (never past
 * SESSION_MAX_DAYS from creation), so the browser drops the cookie when the server would refuse it.
 */
export function setSessionCookie(
  reply: FastifyReply,
  config: Config,
  rawId: string,
  maxAgeSeconds = SESSION_LIFETIME_DAYS * 24 * 3600,
): void {
  const { name, secure } = sessionCookie(config);
  reply.setCookie(name, rawId, {
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure,
    maxAge: Math.max(0, Math.floor(maxAgeSeconds)),
  });
}

/** Re-issues the cookie when this request slid the session's expiry (at most once every 5 minutes). */
export function renewSessionCookie(
  reply: FastifyReply,
  config: Config,
  rawId: string | undefined,
  session: SessionInfo | null,
): void {
  if (rawId && session?.renewedForSeconds !== undefined)
    setSessionCookie(reply, config, rawId, session.renewedForSeconds);
}

export function clearSessionCookie(reply: FastifyReply, config: Config): void {
  const { name, secure } = sessionCookie(config);
  reply.clearCookie(name, { path: '/', httpOnly: true, sameSite: 'lax', secure });
}

/** Ends sessions of a user in the transaction's tenant, optionally keeping one. */
export async function endSessions(
  ctx: TxContext,
  userId: string,
  options: { keepSessionId?: string } = {},
): Promise<number> {
  const result = await ctx.db.executeQuery(
    CompiledQuery.raw(
      options.keepSessionId
        ? 'delete from sessions where user_id = $1 and id <> $2'
        : 'delete from sessions where user_id = $1',
      options.keepSessionId ? [userId, options.keepSessionId] : [userId],
    ),
  );
  return Number(result.numAffectedRows ?? 0);
}

/**
 * Ends the session a cookie names, if there is one: sign-out, and a sign-in replacing the
 * browser's previous session. Also removes a row the cookie names that no longer counts as a
 * session (expired, or its user deactivated).
 */
export async function endSession(ctx: TxContext, rawId: string): Promise<void> {
  await ctx.db.executeQuery(CompiledQuery.raw('delete from sessions where id_hash = $1', [hashSecret(rawId)]));
}

/** Deletes up to `batch` sessions of the transaction's tenant that expired by its clock reading; answers how many. */
export async function purgeExpiredSessions(ctx: TxContext, batch: number): Promise<number> {
  const result = await ctx.db.executeQuery(
    CompiledQuery.raw('delete from sessions where id in (select id from sessions where expires_at <= $1 limit $2)', [
      ctx.now,
      batch,
    ]),
  );
  return Number(result.numAffectedRows ?? 0);
}
