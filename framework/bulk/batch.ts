import Type, { type TSchema } from 'typebox';
import { StringEnum } from '../entity/string-enum.ts';
import type { FastifyRequest } from 'fastify';
import type { RouteDefinition } from '../entity/define.ts';
import type { ModuleRegistry } from '../contracts/services.ts';
import type { RegisteredRoute } from '../contracts/composition.ts';
import { API_PREFIX } from '../entity/names.ts';
import { ProblemError, problem, problemDeclaration, type FieldError, type ProblemCode } from '../errors.ts';
import { problemResponse } from '../openapi/problem-schema.ts';
import { secretPaths, type SecretPath } from '../http/withheld-secrets.ts';
import type { AnswerSecrets } from '../http/idempotency.ts';
import { asBatchMember, batchMemberOf, type BatchMemberPreparing, type BatchMemberRunning } from './batch-member.ts';
import {
  parseAnswer,
  type BatchPrepareScope,
  type BatchRequestScope,
  type BatchRoutes,
  type BatchScope,
} from './batch-routes.ts';
import { refuseCrossSite } from '../access/cross-site.ts';
import { bearerTokenOf } from '../access/bearer.ts';
import { toProblem } from '../http/problems.ts';

/** The most requests one batch carries. */
export const BATCH_MAX = 100;

/** The batch's own path. */
export const BATCH_PATH = `${API_PREFIX}/batch`;

/** A batch's body: a JSON request per item, each at most what its route takes, the whole bounded here. */
export const BATCH_BODY_LIMIT = 16 * 1024 * 1024;

const BatchRequest = Type.Object(
  {
    method: StringEnum(['POST', 'PUT', 'PATCH', 'DELETE'], {
      description: 'A write: creates (POST, a singleton PUT), PATCHes, deletes and commands. Reads are not batched.',
    }),
    path: Type.String({
      pattern: '^/api/v1/[^?#]*$',
      maxLength: 2048,
      description: "A path of this tenant's API, as the request would be sent alone, without a query string",
    }),
    body: Type.Optional(Type.Unknown({ description: "The request's JSON body, as the route takes it alone" })),
  },
  {
    additionalProperties: false,
    // A request as a client writes one (its body free-form, so a sample is given rather than derived).
    examples: [{ method: 'DELETE', path: '/api/v1/task/tasks/00000000-0000-4000-8000-000000000000' }],
  },
);

const BatchBody = Type.Object(
  {
    requests: Type.Array(BatchRequest, {
      minItems: 1,
      maxItems: BATCH_MAX,
      description: `1 to ${BATCH_MAX} requests, run in this order in one transaction`,
    }),
  },
  { additionalProperties: false },
);

const BatchResult = Type.Object(
  {
    status: Type.Integer({ description: "The request's status, as it would have been answered alone" }),
    body: Type.Unknown({ description: "The request's answer (null for a 204)" }),
    location: Type.Optional(Type.String({ description: 'The Location a create answered with' })),
    operationId: Type.String({ description: 'The operation the request reached' }),
  },
  { additionalProperties: false },
);

const BatchAnswer = Type.Object(
  { results: Type.Array(BatchResult, { description: 'One result per request, in the order sent' }) },
  { additionalProperties: false },
);

type BatchItem = { method: 'POST' | 'PUT' | 'PATCH' | 'DELETE'; path: string; body?: unknown };
type Result = { status: number; body: unknown; location?: string; operationId: string };

/**
 * The headers a batch's request carries from the batch: who is asking (the cookie, or a bearer
 * token), and what the cross-site rule reads, so each request is authenticated and refused as it
 * would be sent alone from the same client. Its body is JSON; its Idempotency-Key is the batch's.
 */
const CARRIED_HEADERS = [
  'host',
  'cookie',
  'authorization',
  'origin',
  'referer',
  'sec-fetch-site',
  'sec-fetch-mode',
  'sec-fetch-dest',
  'user-agent',
  'accept-language',
] as const;

/**
 * POST /api/v1/batch: up to 100 writes of this tenant's API in one transaction, all applied or
 * none. Each request is served as if sent alone: its path is resolved at the boot-built table
 * (batch-routes.ts), and its route's operation is called directly (http/batch-operation.ts: the
 * refusals of the route's hooks, its body limit, protected-field checks and schemas, the guard's
 * verdict on the batch's caller for that route, its handler in the batch's transaction, its answer
 * serialised by its response schema). What is the same for every request (the tenant, the caller
 * and its session, the headers, the cross-site verdict) is resolved once per batch. A path that
 * resolves to no direct operation (no route, a public or cookie-only route, one that opens its own
 * transactions, the batch itself) is dispatched through the request path instead (fastify's
 * `inject`), its strategy finding the batch through batch-member.ts. The first request that fails
 * stops the batch: the transaction rolls back and the answer is that request's problem, naming its
 * index. Events the requests publish are inserted in the batch's outbox and relayed once it
 * commits. An Idempotency-Key covers the whole batch; a secret a request's answer shows once is
 * withheld from the recorded answer by that route's schema.
 */
export function batchRoute(
  registry: ModuleRegistry,
  routes: readonly RegisteredRoute[],
  table: BatchRoutes,
): RouteDefinition {
  // The response schemas of every operation a batch may reach, by operation id: where their secrets sit.
  const responses = new Map<string, Readonly<Record<number, TSchema>>>(
    routes.map(({ route }) => [route.operationId, route.schema.response]),
  );
  const secretsByOperation = new Map<string, SecretPath[]>();
  const secretsOf = (operationId: string, status: number): SecretPath[] => {
    const key = `${operationId} ${status}`;
    let paths = secretsByOperation.get(key);
    if (!paths) {
      paths = secretPaths(responses.get(operationId)?.[status]);
      secretsByOperation.set(key, paths);
    }
    return paths;
  };
  const answerSecrets: AnswerSecrets = (answer) => {
    const results = (answer as { results?: unknown }).results;
    if (!Array.isArray(results)) return [];
    return results.flatMap((result: Partial<Result>, index) =>
      typeof result?.operationId === 'string' && typeof result.status === 'number'
        ? secretsOf(result.operationId, result.status).map((path) => ['results', String(index), 'body', ...path])
        : [],
    );
  };

  return {
    method: 'POST',
    url: BATCH_PATH,
    operationId: 'batch-request-run',
    summary: 'Run several writes in one transaction',
    description:
      `Up to ${BATCH_MAX} creates, PATCHes, deletes and commands of this tenant's API, run in the order sent in one transaction: all of them apply or none does. ` +
      "Each request is served as if it were sent alone by the same caller (its permission, its validation, its protected fields, its refusals), and the answer carries each one's status and body. " +
      "The first request that fails stops the batch and rolls back the ones before it: the answer is that request's own problem (its status and code), with `index` (its position, from 0), `request` (its method and path), and its error pointers under /body/requests/<index>. " +
      'Routes that run outside a transaction of their own (an upload, a command that prepares a payment) cannot be batched: 422 BATCH_REQUEST_UNSUPPORTED. ' +
      'Events are published once the batch commits. An Idempotency-Key covers the whole batch.',
    tags: ['batch'],
    access: 'signedIn',
    idempotent: true,
    // Any declared event: each request's publish is held to its own route's list (batch-member.ts).
    publishes: [...registry.events],
    bodyLimit: BATCH_BODY_LIMIT,
    problems: {
      422: "A request the batch cannot carry (BATCH_REQUEST_UNSUPPORTED), a body outside the schema (VALIDATION_FAILED), or a request's own 422, with its index",
    },
    schema: {
      body: BatchBody,
      response: {
        200: { ...BatchAnswer, 'x-response-description': 'Every request applied: their results, in order' } as TSchema,
        403: problemResponse(
          "A request the caller may not make (AUTH_FORBIDDEN, AUTH_NOT_OPERATOR), or the plan refuses (FEATURE_NOT_IN_PLAN, PLAN_LIMIT_REACHED), or a request's own 403, with its index; or the batch sent from another site (AUTH_CROSS_SITE)",
        ),
        404: problemResponse('A request naming no route or no resource (ROUTE_NOT_FOUND, NOT_FOUND), with its index'),
        409: problemResponse("A request's own conflict (ALREADY_EXISTS, INVALID_STATE, ...), with its index"),
      },
    },
    // A request whose route has a step before its transaction (a command that hashes a password
    // first) is prepared, in the order sent, before the batch's transaction opens.
    prepares: ({ body }) => requestsOf(body).some((item) => table.hasStep(item.method, item.path)),
    beforeTransaction: async ({ body, request, reply, session }) => {
      refuseNested(request);
      const headers = carriedHeaders(request);
      const scope: BatchPrepareScope = { ...requestScope(request, reply, headers), session };
      const prepared: unknown[] = [];
      for (const [index, item] of requestsOf(body).entries()) {
        if (!table.hasStep(item.method, item.path)) {
          prepared.push(undefined);
          continue;
        }
        const found = table.find(item.method, item.path);
        prepared.push(
          found
            ? await preparedDirect(scope, index, item, found)
            : await preparedDispatched(scope, request, headers, index, item),
        );
      }
      return prepared;
    },
    handler: async ({ tx, body, request, reply, prepared }) => {
      refuseNested(request);
      const headers = carriedHeaders(request);
      const scope: BatchScope = { ...requestScope(request, reply, headers), tx };
      const steps = (prepared ?? []) as readonly unknown[];
      const results: Result[] = [];
      for (const [index, item] of requestsOf(body).entries()) {
        const found = table.find(item.method, item.path);
        const result = found
          ? await direct(scope, index, item, found, steps[index])
          : await dispatched(tx, request, headers, index, item, steps[index]);
        results.push(result);
      }
      return { results };
    },
    idempotentSecrets: answerSecrets,
  };
}

const JSON_BODY = { 'content-type': 'application/json' } as const;

const requestsOf = (body: unknown): readonly BatchItem[] => (body as { requests: BatchItem[] }).requests;

/** A batch inside a batch would open nothing new; it is refused rather than half-supported. */
function refuseNested(request: FastifyRequest): void {
  if (batchMemberOf(request.headers)) throw problem('BATCH_REQUEST_UNSUPPORTED', 'A batch cannot contain a batch');
}

/** What every request of the batch shares, resolved once from the batch's own request. */
function requestScope(
  request: FastifyRequest,
  reply: BatchRequestScope['reply'],
  headers: Record<string, string>,
): BatchRequestScope {
  let crossSite: ProblemError | undefined;
  try {
    refuseCrossSite({ headers });
  } catch (err) {
    crossSite = toProblem(err);
  }
  const length = Number(request.headers['content-length']);
  return {
    tenant: request.tenant ?? missingTenant(),
    request,
    reply,
    headers,
    bearer: bearerTokenOf({ headers }),
    crossSite,
    bodyBytes: Number.isFinite(length) ? length : Number.POSITIVE_INFINITY,
  };
}

const missingTenant = (): never => {
  throw problem('NO_SITE');
};

/** A refusal of one request, thrown as the batch's answer naming its index. */
function refusedMember(scope: BatchRequestScope, index: number, item: BatchItem, err: unknown): ProblemError {
  const refused = toProblem(err);
  // What the request path's error handler logs of a request sent alone.
  if (refused.status >= 500) scope.request.log.error({ err, index }, 'a request of a batch failed');
  return memberFailure(index, item, refused.status, refused.toDocument());
}

/** One request's step before the batch's transaction, its route's operation called directly. */
async function preparedDirect(
  scope: BatchPrepareScope,
  index: number,
  item: BatchItem,
  found: NonNullable<ReturnType<BatchRoutes['find']>>,
): Promise<unknown> {
  const { operation, params } = found;
  try {
    return await operation.prepare?.(scope, { params, body: item.body });
  } catch (err) {
    throw refusedMember(scope, index, item, err);
  }
}

/** One request's step before the batch's transaction, dispatched through the request path (fastify's inject). */
async function preparedDispatched(
  scope: BatchPrepareScope,
  request: FastifyRequest,
  headers: Record<string, string>,
  index: number,
  item: BatchItem,
): Promise<unknown> {
  const member: BatchMemberPreparing = { phase: 'prepare', tenant: scope.tenant, session: scope.session };
  const response = await asBatchMember(member, (named) => inject(request, headers, named, item));
  if (response.statusCode >= 400) throw memberFailure(index, item, response.statusCode, parseAnswer(response.body));
  if (!member.served)
    throw problem('INTERNAL', `request ${index} of the batch was answered before its route could prepare it`);
  return member.prepared;
}

/** One request, its route's operation called directly in the batch's transaction. */
async function direct(
  scope: BatchScope,
  index: number,
  item: BatchItem,
  found: NonNullable<ReturnType<BatchRoutes['find']>>,
  prepared: unknown,
): Promise<Result> {
  const { operation, params } = found;
  let answer: Awaited<ReturnType<typeof operation.run>>;
  try {
    answer = await operation.run(scope, { params, body: item.body }, prepared);
  } catch (err) {
    throw refusedMember(scope, index, item, err);
  }
  if (answer.status >= 400) throw memberFailure(index, item, answer.status, answer.body);
  return {
    status: answer.status,
    body: answer.body,
    ...(answer.location !== undefined ? { location: answer.location } : {}),
    operationId: operation.operationId,
  };
}

/**
 * A dot segment (`.` or `..`, also percent-encoded) or a backslash: the router resolves neither,
 * so sent alone such a path names no route, whereas inject's URL parser would resolve the dots (a
 * backslash read as a slash), to another route or out of the API (an admin page).
 */
const DOT_SEGMENT = /(^|\/)(\.|%2e){1,2}(\/|$)/i;

/** One request dispatched through the request path (fastify's inject), served in the batch's transaction. */
async function dispatched(
  tx: BatchScope['tx'],
  request: FastifyRequest,
  headers: Record<string, string>,
  index: number,
  item: BatchItem,
  prepared: unknown,
): Promise<Result> {
  if (DOT_SEGMENT.test(item.path) || item.path.includes('\\'))
    throw memberFailure(index, item, 404, { code: 'ROUTE_NOT_FOUND', detail: `No route ${item.method} ${item.path}` });
  const member: BatchMemberRunning = { phase: 'run', tenant: tx.tenant, tx, prepared };
  const response = await asBatchMember(member, (named) => inject(request, headers, named, item));
  const answer = parseAnswer(response.body);
  if (response.statusCode >= 400) throw memberFailure(index, item, response.statusCode, answer);
  // Every answer that is not a refusal came from a handler run in the batch's transaction.
  if (!member.served)
    throw problem('INTERNAL', `request ${index} of the batch was answered outside the batch's transaction`);
  const location = response.headers.location;
  return {
    status: response.statusCode,
    body: answer,
    ...(typeof location === 'string' ? { location } : {}),
    operationId: member.served.operationId,
  };
}

/** One request of the batch through the request path, with the header naming its member. */
function inject(
  request: FastifyRequest,
  headers: Record<string, string>,
  named: Record<string, string>,
  item: BatchItem,
) {
  return request.server.inject({
    method: item.method,
    url: item.path,
    headers: { ...headers, ...named, ...(item.body !== undefined ? JSON_BODY : {}) },
    remoteAddress: request.ip,
    ...(item.body !== undefined ? { payload: JSON.stringify(item.body) } : {}),
  });
}

function carriedHeaders(request: FastifyRequest): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of CARRIED_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return headers;
}

// Any installed code, the modules' (LAST_ADMINISTRATOR, ROLE_UNKNOWN...) as well as the framework's.
const isProblemCode = (code: unknown): code is ProblemCode =>
  typeof code === 'string' && problemDeclaration(code) !== undefined;

/**
 * The batch's answer when one of its requests failed: that request's own problem (its code, so its
 * status), its detail said of the request, its pointers moved under /body/requests/<index>.
 */
function memberFailure(index: number, item: BatchItem, status: number, answer: unknown): ProblemError {
  const document = (answer ?? {}) as Record<string, unknown>;
  const code = isProblemCode(document.code) ? document.code : 'INTERNAL';
  const {
    type: _type,
    title: _title,
    status: _status,
    detail,
    code: _code,
    errors,
    ...extensions
  } = document as { detail?: unknown; errors?: FieldError[] } & Record<string, unknown>;
  const at = `/body/requests/${index}`;
  const moved = Array.isArray(errors)
    ? errors.map((error) => ({ pointer: `${at}${error.pointer ?? ''}`, message: error.message }))
    : undefined;
  const said = typeof detail === 'string' ? detail : `answered ${status}`;
  return new ProblemError(
    code,
    `Request ${index} (${item.method} ${item.path}) failed: ${said}. The batch was rolled back: nothing was applied.`,
    {
      ...(moved ? { errors: moved } : {}),
      extensions: { ...extensions, index, request: { method: item.method, path: item.path } },
    },
  );
}
