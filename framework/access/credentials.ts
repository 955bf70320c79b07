import { CompiledQuery } from 'kysely';
import type { TxContext } from '../context/tx.ts';
import { problem } from '../errors.ts';
import { endSessions } from './sessions.ts';

/**
 * Credentials and privileges change only from a signed-in session, never with a personal access
 * token: a person's password and sign-in address, their tokens, the roles they hold and what a
 * role grants. Otherwise a token scoped to user:manage could set its own user's password, sign in
 * with it and mint a wider, longer-lived token; a token is meant to be bounded by what it names.
 *
 * Two layers say it. The routes that make such changes take the session cookie only (`bearer:
 * false` on the route, or on the command: RouteDefinition.bearer, CommandDefinition.bearer), so a
 * token alone is 401 AUTH_REQUIRED at the door and OpenAPI documents the cookie only. And every
 * operation that makes the change calls `refuseTokenCaller` itself, so a route that forgets the
 * declaration (or a route that does more than that, like an invitation granting roles) still
 * refuses a token caller with the same 401.
 */
export function refuseTokenCaller(ctx: Pick<TxContext, 'session'>, what: string): void {
  if (ctx.session?.via !== 'token') return;
  throw problem(
    'AUTH_REQUIRED',
    `${what} needs a signed-in session: a personal access token never changes credentials or roles`,
  );
}

/**
 * Ends a person's personal access tokens in the transaction's tenant (the identity table
 * access_tokens, access/identity-tables.ts): their next request is 401 TOKEN_INVALID. Answers how
 * many ended.
 */
export async function endAccessTokens(ctx: TxContext, userId: string): Promise<number> {
  const result = await ctx.db.executeQuery(CompiledQuery.raw('delete from access_tokens where user_id = $1', [userId]));
  return Number(result.numAffectedRows ?? 0);
}

/**
 * What a password set without the one in force does (an administrator's set-password, a reset
 * from a mailed link): it ends every session and every personal access token of the person, in the
 * caller's transaction, so nothing taken before the new password outlives it. A password change,
 * which proves the one in force, ends the other sessions only (password.routes.ts) and keeps the
 * tokens: they were made by the person, each for its own purpose.
 */
export async function endCredentialsOf(ctx: TxContext, userId: string): Promise<void> {
  await endSessions(ctx, userId);
  await endAccessTokens(ctx, userId);
}
