import { randomBytes } from 'node:crypto';
import type { ModuleRegistry as Registry, TxContext } from '../../framework/entity/define.ts';
import { ACCESS_TOKEN_PREFIX } from '../../framework/access/bearer.ts';
import { hashSecret } from '../../framework/access/session-cookie.ts';
import { notFound, problem } from '../../framework/errors.ts';
import type { ListFilter, Page } from '../../framework/operations/paging.ts';
import { tokenList } from './token-list.ts';
import type { ListQuery } from '../../framework/query/parse.ts';
import { refuseTokenCaller } from '../../framework/access/credentials.ts';
import { checkedPermissions } from './roles.routes.ts';
import './tokens-table.ts';
import { admitLimit } from '../../framework/entitlements/limits.ts';

/**
 * Personal access tokens: the operations behind POST/GET /api/v1/auth/tokens and
 * DELETE /api/v1/auth/tokens/{id}, which the admin shell's tokens page runs too (tokens.admin.ts),
 * so both apply the same rules. The framework resolves a token on each bearer request
 * (framework/context/opening.ts); this module makes, lists and ends them.
 */

/** A token lives this long unless its maker says otherwise… */
export const DEFAULT_TOKEN_DAYS = 90;
/** …and never longer than a year. */
export const MAX_TOKEN_DAYS = 365;
/** Revokes and lists every token of the tenant, not only the caller's own (the admin role holds it through "*"). */
export const TOKEN_MANAGE = 'token:manage';

export interface AccessTokenView {
  id: string;
  userId: string;
  name: string;
  permissions: string[];
  createdAt: Date;
  expiresAt: Date;
  lastUsedAt: Date | null;
}

const TOKEN_ROW = [
  'id',
  'user_id as userId',
  'name',
  'permissions',
  'created_at as createdAt',
  'expires_at as expiresAt',
  'last_used_at as lastUsedAt',
] as const;

/** A fresh raw token: the prefix and 256 random bits, base64url. Only its SHA-256 is stored. */
const newRawToken = (): string => `${ACCESS_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;

export interface NewToken {
  name: string;
  expiresInDays?: number | undefined;
  permissions: readonly string[];
}

/**
 * Makes a token for the signed-in caller: a subset of the permissions the caller holds now (the
 * wildcard only for a caller who holds it), for at most MAX_TOKEN_DAYS, never an operator
 * permission outside the operator tenant (as roles, checkedPermissions). Answers the token and the
 * raw value, which is shown this once and never again. A token never makes a token (401
 * AUTH_REQUIRED): the route takes the cookie only, and this refuses a token's caller itself.
 */
export async function createToken(
  tx: TxContext,
  registry: Registry,
  input: NewToken,
): Promise<{ token: AccessTokenView; raw: string }> {
  const session = tx.session;
  if (!session) throw problem('AUTH_REQUIRED', 'Sign in to use this route');
  refuseTokenCaller(tx, 'Making an access token');
  const days = input.expiresInDays ?? DEFAULT_TOKEN_DAYS;
  if (days > MAX_TOKEN_DAYS) {
    throw problem('TOKEN_EXPIRY_TOO_LONG', `A token lives at most ${MAX_TOKEN_DAYS} days`, {
      errors: [{ pointer: '/body/expiresInDays', message: `at most ${MAX_TOKEN_DAYS} days` }],
      extensions: { maxDays: MAX_TOKEN_DAYS },
    });
  }
  // 422 PERMISSION_UNKNOWN for a name no module defines, PERMISSION_OPERATOR_ONLY for an operator
  // permission at a customer (which a customer's `*` would otherwise let through the check below).
  const permissions = checkedPermissions(registry, tx.tenant, input.permissions);
  const notHeld = permissions.filter((p) => !(session.permissions.has('*') || session.permissions.has(p)));
  if (notHeld.length > 0) {
    throw problem(
      'TOKEN_PERMISSION_NOT_HELD',
      `A token may hold only permissions you hold; you do not hold ${notHeld.join(', ')}`,
      {
        errors: notHeld.map((p) => ({
          pointer: `/body/permissions/${input.permissions.indexOf(p)}`,
          message: `you do not hold ${p}`,
        })),
        extensions: { permissions: notHeld },
      },
    );
  }
  // One more unexpired token: within the plan's token.active, under the limit's lock.
  await admitLimit(tx, 'token.active', 1);
  const raw = newRawToken();
  const token = await tx.db
    .insertInto('access_tokens')
    .values({
      user_id: session.userId,
      name: input.name.trim(),
      token_hash: hashSecret(raw),
      permissions,
      created_at: tx.now,
      expires_at: new Date(tx.now.getTime() + days * 24 * 3600_000),
    })
    .returning(TOKEN_ROW)
    .executeTakeFirstOrThrow();
  tx.publish('auth.token_created', { id: token.id, userId: session.userId });
  return { token, raw };
}

/** A UUID as a query value names it: in eq.<id>, in.(<id>,...), or alone (`userId=<id>`, the older form). */
const UUIDS = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/**
 * A page of tokens (expired ones too, until the sweep removes them) as the query string asks
 * (token-list.ts: filters, sort, paging). Whose: the caller's own; with a userId filter, the
 * users it names, which for anyone but the caller needs token:manage (403 AUTH_FORBIDDEN naming
 * it). A caller without it is kept to their own rows by the list's own condition, whatever the
 * filter says; a bare id (`userId=<id>`) is read as `userId=eq.<id>`.
 */
export async function listTokens(
  tx: TxContext,
  query: Record<string, unknown>,
): Promise<{ page: Page<AccessTokenView>; asked: ListQuery }> {
  const { page, asked } = await tokenList.page(tx, query, tokenScope(tx, query));
  return { page: page as unknown as Page<AccessTokenView>, asked };
}

/** Whose tokens a list (or its export) holds, by listTokens's rule; 403 for another user's without token:manage. */
export function tokenScope(tx: TxContext, query: Record<string, unknown>): ListFilter {
  const session = tx.session;
  if (!session) throw problem('AUTH_REQUIRED', 'Sign in to use this route');
  const written = [query.userId ?? []].flat().map(String);
  const named = written.flatMap((value) => value.match(UUIDS) ?? []).map((id) => id.toLowerCase());
  const manages = tx.can(TOKEN_MANAGE);
  if (!manages && named.some((id) => id !== session.userId.toLowerCase()))
    throw problem('AUTH_FORBIDDEN', `Listing another user's tokens requires permission ${TOKEN_MANAGE}`);
  return manages && written.length > 0
    ? { conditions: [], params: [] }
    : { conditions: ['user_id = $1'], params: [session.userId] };
}

/**
 * Ends a token at once: the caller's own, or any of the tenant's with token:manage. Another
 * user's token is not found for a caller without it, so its existence is not disclosed.
 */
export async function revokeToken(tx: TxContext, id: string): Promise<void> {
  const session = tx.session;
  if (!session) throw problem('AUTH_REQUIRED', 'Sign in to use this route');
  let query = tx.db.deleteFrom('access_tokens').where('id', '=', id);
  if (!tx.can(TOKEN_MANAGE)) query = query.where('user_id', '=', session.userId);
  const deleted = await query.returning(['id', 'user_id']).executeTakeFirst();
  if (!deleted) throw notFound();
  tx.publish('auth.token_revoked', { id: deleted.id, userId: deleted.user_id });
}

/** Deletes at most `batch` tokens past their expiry (auth-sweep); answers how many went. */
export async function purgeExpiredTokens(tx: TxContext, batch: number): Promise<number> {
  const result = await tx.db
    .deleteFrom('access_tokens')
    .where('id', 'in', (eb) =>
      eb.selectFrom('access_tokens').select('id').where('expires_at', '<=', tx.now).limit(batch),
    )
    .executeTakeFirstOrThrow();
  return Number(result.numDeletedRows);
}

/** Ends every token of a user (deactivation). */
export async function revokeTokensOf(tx: TxContext, userId: string): Promise<number> {
  const result = await tx.db.deleteFrom('access_tokens').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows);
}
