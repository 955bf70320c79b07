import Type from 'typebox';
import { defineRoute, Secret } from '../../framework/entity/define.ts';
import { THROTTLE } from './throttle.ts';
import {
  DEFAULT_TOKEN_DAYS,
  MAX_TOKEN_DAYS,
  TOKEN_MANAGE,
  createToken,
  listTokens,
  revokeToken,
  tokenScope,
  type AccessTokenView,
} from './tokens.ts';
import { pageSchema } from '../../framework/operations/paging.ts';
import { selectAnswer } from '../../framework/query/expansion.ts';
import { AccessTokenFields, AccessTokenSchema, TOKENS_PATH, TokenListQuery, tokenList } from './token-list.ts';

const AccessTokenCreatedSchema = Type.Object(
  {
    ...AccessTokenFields,
    // A secret shown once (Secret()): an answer recorded for an Idempotency-Key (a batch's) keeps null in its place.
    token: Secret(
      Type.String({
        description:
          'The raw token, shown this once: only its SHA-256 is stored. Send it as Authorization: Bearer <token>. A secret shown once: a replay of a batch that made it (the same Idempotency-Key) has null here and names the field in its header Idempotent-Secrets-Withheld.',
      }),
    ),
  },
  { additionalProperties: false, title: 'AccessTokenCreated', description: 'The token just made, with its raw value' },
);

const AccessTokenCreateSchema = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 100,
      pattern: '\\S',
      description: 'To recognise the token in the list',
    }),
    expiresInDays: Type.Optional(
      Type.Integer({
        minimum: 1,
        description: `Days until it expires: default ${DEFAULT_TOKEN_DAYS}, at most ${MAX_TOKEN_DAYS} (more is 422 TOKEN_EXPIRY_TOO_LONG)`,
      }),
    ),
    permissions: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
      maxItems: 200,
      description: 'A subset of the caller\'s own permissions ("*" only for a caller holding every permission)',
    }),
  },
  { additionalProperties: false, title: 'AccessTokenCreate' },
);

// Expired tokens are listed too, until the hourly sweep removes them.
const AccessTokenListSchema = pageSchema(
  AccessTokenSchema,
  "A user's personal access tokens, expired ones included until the hourly sweep removes them",
);

const toJson = (token: AccessTokenView) => ({
  ...token,
  createdAt: token.createdAt.toISOString(),
  expiresAt: token.expiresAt.toISOString(),
  lastUsedAt: token.lastUsedAt ? token.lastUsedAt.toISOString() : null,
});

const SESSION_ONLY =
  'Takes the session cookie only: an Authorization: Bearer header is ignored here, so a token can neither make, list nor end tokens.';

export const createTokenRoute = defineRoute({
  method: 'POST',
  url: TOKENS_PATH,
  operationId: 'auth-token-create',
  summary: 'Make a personal access token',
  description: [
    'Makes a token that acts for the signed-in user through Authorization: Bearer <token>, on this tenant only. The answer carries the raw token once; only its SHA-256 is stored, as for session ids.',
    `It expires after expiresInDays (default ${DEFAULT_TOKEN_DAYS}, at most ${MAX_TOKEN_DAYS}: more is 422 TOKEN_EXPIRY_TOO_LONG). Its permissions must be ones the caller holds (403 TOKEN_PERMISSION_NOT_HELD otherwise; 422 PERMISSION_UNKNOWN for a name no module defines). Each request with the token may do what the token names and the user still holds at that moment, so taking a role from the user takes it from the token at once.`,
    `The token ends when revoked (DELETE /api/v1/auth/tokens/{id}), when it expires, and when its user is deactivated. Failed bearer attempts count towards the sign-in limit of the client address (${THROTTLE.login.max} in ${THROTTLE.login.windowMinutes} minutes, then 429 ErrTooManyAttempts with Retry-After).`,
    SESSION_ONLY,
    'Publishes auth.token_created.',
  ].join('\n\n'),
  tags: ['auth'],
  access: 'signedIn',
  bearer: false,
  // One more unexpired token (tokens.ts).
  entitlements: { limit: 'token.active' },
  publishes: ['auth.token_created'],
  problems: {
    403: 'A permission the caller does not hold (TOKEN_PERMISSION_NOT_HELD)',
    422: 'Validation failed (VALIDATION_FAILED), an expiry past a year (TOKEN_EXPIRY_TOO_LONG), or a permission no module defines (PERMISSION_UNKNOWN)',
  },
  schema: {
    body: AccessTokenCreateSchema,
    response: { 201: AccessTokenCreatedSchema },
  },
  async handler({ tx, body, reply, services }) {
    const { token, raw } = await createToken(tx, services.registry, body);
    reply.code(201);
    return { ...toJson(token), token: raw };
  },
});

export const listTokensRoute = defineRoute({
  method: 'GET',
  url: TOKENS_PATH,
  operationId: 'auth-token-list',
  summary: 'List personal access tokens',
  description: [
    `The caller's own tokens, newest first by default, without their secrets. Filtered, sorted and paged like every list (docs/api-conventions.md, "Filters"): by expiry (expiresAt=lt.now+7d), name, permission (permissions=contains.task:read), creation or last use; limit and offset, or after=<next>. With a userId filter (userId=eq.<id>, userId=in.(<id>,<id>); a bare userId=<id> reads as eq), the tokens of the users it names: anyone but the caller needs permission ${TOKEN_MANAGE} (403 AUTH_FORBIDDEN). Without that permission a list never holds another person's tokens, whatever the filter.`,
    SESSION_ONLY,
  ].join('\n\n'),
  tags: ['auth'],
  access: 'signedIn',
  bearer: false,
  problems: { 403: `Another user's tokens without permission ${TOKEN_MANAGE} (AUTH_FORBIDDEN)` },
  schema: {
    querystring: TokenListQuery,
    response: { 200: AccessTokenListSchema },
  },
  exports: tokenList.exports('tokens', tokenScope),
  async handler({ tx, query, reply }) {
    const { page, asked } = await listTokens(tx, query as Record<string, unknown>);
    return selectAnswer(reply, { ...page, items: page.items.map(toJson) }, asked);
  },
});

export const revokeTokenRoute = defineRoute({
  method: 'DELETE',
  url: `${TOKENS_PATH}/:id`,
  operationId: 'auth-token-revoke',
  summary: 'Revoke a personal access token',
  description: [
    `Ends the token at once: its next request is 401 TOKEN_INVALID. The caller's own token, or any of the tenant's with permission ${TOKEN_MANAGE} (an administrator's, through "*"). Another user's token is 404 NOT_FOUND without it, so its existence is not disclosed.`,
    SESSION_ONLY,
    'Publishes auth.token_revoked.',
  ].join('\n\n'),
  tags: ['auth'],
  access: 'signedIn',
  bearer: false,
  publishes: ['auth.token_revoked'],
  schema: {
    params: Type.Object({ id: Type.String({ format: 'uuid' }) }),
    response: { 204: Type.Null({ description: 'Revoked' }) },
  },
  async handler({ tx, params, reply }) {
    await revokeToken(tx, params.id);
    reply.code(204);
    return null;
  },
});
