import Type from 'typebox';
import { QueryList } from '../../framework/query/query-list.ts';

/** A personal access token as the API answers it: never its secret (only its hash is stored). */
export const AccessTokenFields = {
  id: Type.String({ format: 'uuid' }),
  userId: Type.String({ format: 'uuid', description: 'The user the token acts for' }),
  name: Type.String({ description: 'What its maker called it, to recognise it in the list' }),
  permissions: Type.Array(Type.String(), {
    description:
      'Sorted. What a request with the token may do is these intersected with what the user holds at that moment; "*" stands for all the user holds',
  }),
  createdAt: Type.String({ format: 'date-time' }),
  expiresAt: Type.String({ format: 'date-time', description: 'From then on the token is refused (401 TOKEN_INVALID)' }),
  lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'When a request last authenticated with it (recorded at most once a minute); null when never',
  }),
};

export const AccessTokenSchema = Type.Object(AccessTokenFields, {
  additionalProperties: false,
  title: 'AccessToken',
  description: 'A personal access token, without its secret',
});

// The framework's pager takes its select as SQL text fixed here; the create returns the same row
// with the typed builder (tokens.ts, TOKEN_ROW).
const TOKEN_COLUMN_LIST =
  'id, user_id as "userId", name, permissions, created_at as "createdAt", expires_at as "expiresAt", last_used_at as "lastUsedAt"';

/**
 * The tokens list, through the query language like every list: by user (`userId=eq.<id>`), by
 * expiry (`expiresAt=lt.now+7d`), by name, permission (`permissions=contains.task:read`), creation
 * or last use. Its rows are the caller's own unless the caller holds token:manage and names users
 * (tokens.ts, listTokens). The token's hash is no field: never filtered, sorted or answered.
 */
export const tokenList = new QueryList({
  label: 'access tokens',
  item: AccessTokenSchema,
  select: TOKEN_COLUMN_LIST,
  from: 'access_tokens',
  columns: {
    id: 'id',
    userId: 'user_id',
    name: 'name',
    permissions: 'permissions',
    createdAt: 'created_at',
    expiresAt: 'expires_at',
    lastUsedAt: 'last_used_at',
  },
  indexed: ['createdAt'],
  // userId=<id> is how the list was asked for a user's tokens before it took the query language.
  bareEq: ['userId'],
  defaultSort: '-createdAt',
  sortDescription: 'Newest first (-createdAt) unless sort asks for another order.',
});

/** The tokens list's query string: paging, sort, a filter per field (userId also bare), or and fields. */
export const TokenListQuery = tokenList.querySchema;

/** Where the API lists the caller's tokens (and exports them, ?format=csv: never their secrets). */
export const TOKENS_PATH = '/api/v1/auth/tokens';
