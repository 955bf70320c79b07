import Type, { type TSchema } from 'typebox';
import type { AnyRoute } from '../entity/define.ts';
import { STATE_CHANGING_METHODS } from '../access/cross-site.ts';
import { takesIdempotencyKey } from '../http/idempotency.ts';
import { takesNoBody } from '../http/no-body.ts';

export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: 'URI naming the problem type' }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String({ description: 'Stable machine-readable code, e.g. AUTH_NOT_OPERATOR' }),
    errors: Type.Optional(
      Type.Array(Type.Object({ pointer: Type.String(), message: Type.String() }), {
        description: 'Per-field validation errors',
      }),
    ),
    requestId: Type.Optional(
      Type.String({ description: "The request's id, as in its X-Request-Id answer header and its log lines" }),
    ),
  },
  { additionalProperties: true, $id: 'Problem', title: 'Problem' },
);

// Problems leave as application/problem+json; the response schema says so, and fastify picks
// its serializer by that content type (the Problem schema keeps extension members).
const ref = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: Type.Ref('Problem') } },
});

/** A problem answer a route declares itself (e.g. 429 on a public route), in the same shape. */
export const problemResponse = (description: string): TSchema => Type.Unsafe(ref(description));

/** Refusals joined in one sentence: the first capitalised, the others not (unless they open with an acronym). */
const sentence = (parts: readonly string[]) =>
  parts
    .map((part, i) =>
      i === 0 ? part.replace(/^./, (c) => c.toUpperCase()) : part.replace(/^[A-Z](?=[a-z])/, (c) => c.toLowerCase()),
    )
    .join('; ');

/** The 403s of the tenant's plan a route can give: its feature (the guard's), its limit and a value's feature. */
function planRefusals(route: AnyRoute): string[] {
  const gates = route.entitlements ?? {};
  // The guard asks for the route's feature only of a caller it requires (guard.ts).
  const guarded = route.access !== 'public' && route.access !== 'optional' ? route.feature : undefined;
  const features = [...new Set([guarded, gates.feature].filter((f): f is string => f !== undefined))];
  return [
    ...features.map((feature) => `the tenant's plan without the feature ${feature} (FEATURE_NOT_IN_PLAN)`),
    ...(gates.limit !== undefined
      ? [`a write past the plan's limit ${gates.limit} (PLAN_LIMIT_REACHED, naming the limit, its value and the use)`]
      : []),
  ];
}

/** The problem responses a route can give, derived from what it declares. */
export function problemResponses(route: AnyRoute): Record<number, unknown> {
  const responses: Record<number, unknown> = {
    404: ref('No site at this host, or no such resource'),
    500: ref('Unexpected error'),
    503: ref(
      'Database busy (DB_BUSY: every connection stayed in use), a statement past its time limit (DB_TIMEOUT) or the database unreachable (DB_UNAVAILABLE): retry after the Retry-After seconds. Only a 2xx acknowledges a write',
    ),
  };
  if (route.schema.body || route.schema.querystring || route.schema.params) {
    responses[400] = ref('Malformed request');
    responses[422] = ref(
      takesNoBody(route)
        ? 'Validation failed (VALIDATION_FAILED); a body sent, which this operation does not take (an empty object is taken as none)'
        : 'Validation failed',
    );
  }
  // The router refuses a path parameter over its length limit (100 characters) before the route runs.
  if (route.url.includes('/:')) responses[414] = ref('A path parameter longer than the router accepts (URI_TOO_LONG)');
  const bearer = route.access !== 'public' && route.bearer !== false;
  if (route.access !== 'public' && route.access !== 'optional') {
    responses[401] = ref(
      bearer
        ? 'Not signed in (AUTH_REQUIRED), or a bearer token unknown, expired, revoked or of another tenant (TOKEN_INVALID)'
        : 'Not signed in (AUTH_REQUIRED)',
    );
  } else if (bearer)
    responses[401] = ref('A bearer token unknown, expired, revoked or of another tenant (TOKEN_INVALID)');
  // Failed bearer attempts count with failed sign-ins, per client address (framework/access/bearer.ts).
  if (bearer)
    responses[429] = ref(
      'Too many failed sign-ins or bearer-token attempts from this client address (ErrTooManyAttempts); Retry-After says when to try again',
    );
  const changesState = STATE_CHANGING_METHODS.has(route.method);
  const refusals = [
    ...(typeof route.access === 'object'
      ? ['missing permission (AUTH_FORBIDDEN) or operator permission outside the operator tenant (AUTH_NOT_OPERATOR)']
      : []),
    ...(changesState
      ? [
          'sent from another site (AUTH_CROSS_SITE: Sec-Fetch-Site other than same-origin/none, or an Origin naming another host)',
        ]
      : []),
  ];
  if (changesState) {
    responses[409] = ref('Conflict with the current state');
    responses[415] = ref(
      route.form
        ? 'Body neither JSON nor application/x-www-form-urlencoded (UNSUPPORTED_MEDIA_TYPE)'
        : 'Body not JSON; form-encoded bodies are refused (UNSUPPORTED_MEDIA_TYPE)',
    );
  }
  // Problems particular to the route (a 402, or which 409 it gives), as it documents them.
  for (const [status, description] of Object.entries(route.problems ?? {}))
    if (status !== '403') responses[Number(status)] = ref(description);
  // Every 403 the route can give: the guard's and the cross-site rule's, the route's own (a 403 it
  // documents adds to them, never hides them), and the plan's, from where its gate is declared.
  const forbidden = [...refusals, ...(route.problems?.[403] ? [route.problems[403]] : []), ...planRefusals(route)];
  if (forbidden.length > 0) responses[403] = ref(sentence(forbidden));
  // A keyed create or command (framework/http/idempotency.ts) refuses a key reused for another request.
  if (takesIdempotencyKey(route)) {
    const validation =
      route.problems?.[422] ?? 'Validation failed (VALIDATION_FAILED, the Idempotency-Key header included)';
    responses[422] = ref(
      `${validation}; or an Idempotency-Key used in the last 24 hours for another request (IDEMPOTENCY_KEY_REUSED)`,
    );
  }
  return responses;
}
