import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifySchemaCompiler,
  HookHandlerDoneFunction,
} from 'fastify';
import Type, { type TSchema } from 'typebox';
import type { AnyRoute, EarlyAnswer } from '../entity/define.ts';
import { API_PREFIX } from '../entity/names.ts';
import type { PublishAllowList } from '../context/tx.ts';
import type { ResolvedEntity } from '../entity/resolve.ts';
import type { Services } from '../services.ts';
import { RouteGuard } from '../access/guard.ts';
import { sessionCookie } from '../access/session-cookie.ts';
import { STATE_CHANGING_METHODS, refuseCrossSite } from '../access/cross-site.ts';
import { checkFormToken } from '../access/form-token.ts';
import { problem, type ProblemCode } from '../errors.ts';
import { problemResponse, problemResponses } from '../openapi/problem-schema.ts';
import { typeboxValidatorCompiler } from './validation.ts';
import { validationProblem, type ValidationIssue } from './problems.ts';
import { withRequestId } from '../observability/request-id.ts';
import { idempotencyHeaders, takesIdempotencyKey } from './idempotency.ts';
import { bearerOf, strategyFor, type RoutePlan } from './request-strategies.ts';
import { batchMemberOf, notBatchable } from '../bulk/batch-member.ts';
import { replicaPreferenceHeaders, transactionsFor } from './replica-choice.ts';
import { negotiate, offeredTypes } from './negotiation.ts';
import { asksForExport, exportStrategy } from '../bulk/list-export/export-route.ts';
import type { BatchRoutes } from '../bulk/batch-routes.ts';
import { directOperation } from './batch-operation.ts';
import { bodyNotTaken, takesNoBody } from './no-body.ts';

/** The body limit of a route that declares none. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

const FORM_MEDIA_TYPE = 'application/x-www-form-urlencoded';

/** What a browser form posts by default; the JSON API takes it only on declared form targets. */
function isFormEncoded(request: FastifyRequest): boolean {
  const type = request.headers['content-type'];
  return type !== undefined && type.split(';', 1)[0]!.trim().toLowerCase() === FORM_MEDIA_TYPE;
}

/** The query string of an API route that declares none: no parameter at all. */
const NO_QUERY_PARAMETERS = Type.Object({}, { additionalProperties: false });

/**
 * An API route that declares no query string takes none: an unknown parameter is 422
 * VALIDATION_FAILED there as on every route that declares one (docs/api-conventions.md), not
 * silently ignored (`?format=csv` answered JSON). Pages and probes outside the API are left as declared.
 */
function withQueryString(route: AnyRoute): AnyRoute {
  if (route.schema.querystring || !route.url.startsWith(`${API_PREFIX}/`)) return route;
  return { ...route, schema: { ...route.schema, querystring: NO_QUERY_PARAMETERS } };
}

const noTenant = (): never => {
  throw problem('NO_SITE');
};

/**
 * Registers one declared route. Everything that follows from its declarations is settled here,
 * once: its guard (access/guard.ts), the refusals that run before the body is read, its schemas,
 * and the strategy that serves it (request-strategies.ts: no transaction, one transaction or one
 * exchange), which owns the transaction: the opening statement resolves the session and
 * permissions, the guard decides, the handler runs, it commits, and only then is the reply sent.
 */
export function registerRoute(
  app: FastifyInstance,
  services: Services,
  declared: AnyRoute,
  entity?: ResolvedEntity,
  batchRoutes?: BatchRoutes,
): void {
  const route = withQueryString(declared);
  const cookie = sessionCookie(services.config);
  const guard = new RouteGuard(route.access, services.registry, route.feature);
  const bodyCheck = entity ? protectedBodyCheck(entity, route) : undefined;
  const protectedFields = bodyCheck ? onRequestBody(bodyCheck) : undefined;
  // Only bodies made of the entity's fields (create, PATCH, PUT) answer a field's own code.
  const invalidCodes =
    protectedFields && entity?.def.invalidCodes ? fieldCodeFormatter(entity.def.invalidCodes) : undefined;
  const multipart = route.transaction === 'none' ? route.multipart : undefined;
  const bodyLimit = route.bodyLimit ?? app.initialConfig.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const changesState = STATE_CHANGING_METHODS.has(route.method);
  const noBody = takesNoBody(route);
  // A route that opens its own transactions cannot join a batch's one (bulk/batch.ts): refused
  // before its body is read, so an upload's form is never asked for.
  const batchRefusal = route.transaction === 'none' ? `${route.method} ${route.url}` : undefined;
  // Keys are scoped to the caller, so only a route guarded by a permission takes them.
  const idempotent = takesIdempotencyKey(route);
  const plan: RoutePlan = {
    services,
    guard,
    cookieName: cookie.name,
    publishes: publishAllowList(route, entity),
    // A personal access token (Authorization: Bearer) authenticates every route that has a caller,
    // except those that take the session cookie only (the admin shell, credential management).
    acceptsBearer: route.bearer !== false && guard.resolvesCaller,
    idempotent,
    attemptLimit: services.registry.modules.find((m) => m.bearerAttempts)?.bearerAttempts,
    transactions: transactionsFor(route, services),
  };
  const serve = strategyFor(plan, route);
  // A list's query string takes format= (query-schema.ts) only where the route can export: never silent JSON.
  const takesFormat = (route.schema.querystring as { properties?: Record<string, unknown> } | undefined)?.properties
    ?.format;
  if (takesFormat && route.method === 'GET' && !route.hidden && (route.transaction === 'none' || !route.exports))
    throw new Error(`${route.method} ${route.url} takes format= but declares no exports (RouteDefinition.exports)`);
  // What the route answers in (JSON; a list's CSV and NDJSON too): an Accept that takes none is 406.
  const offered = offeredTypes(route);
  const exporting =
    route.transaction !== 'none' && route.exports && offered
      ? exportStrategy(plan, { ...route, exports: route.exports }, offered)
      : undefined;
  const respond =
    exporting && offered
      ? (request: FastifyRequest, reply: FastifyReply) =>
          asksForExport(request, offered) ? exporting(request, reply) : serve(request, reply)
      : serve;
  // Refusals that need neither the body nor the database run as soon as the request arrives, before
  // the body is read: an operator permission outside the operator tenant (before anything else), a
  // state-changing request another site sent, and a guarded route called with no credential.
  // A callback hook (no promise per request); fastify turns what it throws into the answer.
  const beforeBody = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    // An answer that may depend on who asks is never stored by a browser or a shared cache,
    // refusals included (set first, so a refusal below keeps it).
    if (route.access !== 'public') reply.header('cache-control', 'no-store');
    guard.admitTenant(request.tenant ?? noTenant());
    // A list's ?format= says what it wants (validated with the query string); else its Accept.
    if (offered && !(exporting && (request.query as Record<string, unknown> | undefined)?.format !== undefined))
      negotiate(request, offered);
    if (batchRefusal !== undefined && batchMemberOf(request.headers)) throw notBatchable(batchRefusal);
    const bearer = bearerOf(plan, request);
    // The cross-site rule guards the cookie a browser attaches by itself; a bearer token is sent
    // only by code that holds it (another site's page sets the header only through a CORS
    // preflight, granted to listed origins alone and never with credentials: http/cors.ts), and a
    // request with one is authenticated by it alone.
    if (changesState && bearer === undefined) refuseCrossSite(request);
    if (guard.requiresCaller && bearer === undefined && !request.cookies[cookie.name]) guard.admitCaller(null);
    done();
  };
  // Then, with the body parsed but before it is validated: a form-encoded body where none is
  // expected, or a form without its CSRF token.
  const early = earlyAnswerHook(route, services);
  const formCheck = async (request: FastifyRequest) => {
    if (!isFormEncoded(request)) {
      // A target that takes only forms (the admin shell's posts): JSON, or no body at all, is no form.
      if (route.form === 'only')
        throw problem('UNSUPPORTED_MEDIA_TYPE', 'This page takes only its form (application/x-www-form-urlencoded)');
      return;
    }
    if (!route.form) throw problem('UNSUPPORTED_MEDIA_TYPE', 'This route takes JSON, not a form-encoded body');
    checkFormToken(request, services.config);
  };

  const headers = idempotent
    ? idempotencyHeaders
    : route.replica === 'on-request'
      ? replicaPreferenceHeaders
      : route.schema.headers;
  const responses: Record<string, TSchema> = {
    ...problemResponses(route),
    // Every method that carries a body reads it within a limit: the route's, or the app's 1 MiB.
    ...(route.bodyLimit || multipart || changesState
      ? { 413: problemResponse(`Body larger than ${bodyLimit} bytes (PAYLOAD_TOO_LARGE)`) }
      : {}),
    ...(multipart ? MULTIPART_PROBLEMS : {}),
    // What the route documents itself (e.g. which 413s and 422s an upload gives) is the more precise.
    ...route.schema.response,
  };
  // A request of a batch reaches the route's operation directly (bulk/batch-routes.ts), except on
  // the routes that answer with or end a session cookie, which an answer inside a batch cannot
  // carry: public routes and those that take the session cookie only (bearer: false) are
  // dispatched through the request path, as is a route that opens its own transactions (refused).
  if (batchRoutes && route.transaction !== 'none' && route.beforeTransaction)
    batchRoutes.prepares(route.method, route.url);
  if (batchRoutes && route.transaction !== 'none' && route.access !== 'public' && route.bearer !== false)
    batchRoutes.direct(
      route.method,
      route.url,
      directOperation({
        plan,
        route,
        schemas: {
          ...(route.schema.params ? { params: route.schema.params } : {}),
          ...(route.schema.querystring ? { querystring: route.schema.querystring } : {}),
          ...(headers ? { headers } : {}),
          ...(route.schema.body ? { body: route.schema.body } : {}),
        },
        responses,
        ...(invalidCodes ? { errorFormatter: invalidCodes } : {}),
        ...(bodyCheck ? { bodyCheck } : {}),
        noBody,
        bodyLimit,
      }),
    );

  app.route({
    method: route.method,
    url: route.url,
    ...(route.bodyLimit ? { bodyLimit: route.bodyLimit } : {}),
    config: { hidesNoSite: route.hidesNoSite === true },
    // A multipart form is streamed by the handler, never parsed or validated before it runs.
    ...(multipart ? { validatorCompiler: skipBodyValidation } : {}),
    ...(invalidCodes ? { schemaErrorFormatter: invalidCodes } : {}),
    schema: {
      ...(route.hidden ? { hide: true } : {}),
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: [...(route.tags ?? [])],
      ...(route.schema.params ? { params: route.schema.params } : {}),
      ...(route.schema.querystring ? { querystring: route.schema.querystring } : {}),
      ...(headers ? { headers } : {}),
      ...(multipart
        ? { body: multipart.form, consumes: ['multipart/form-data'] }
        : route.schema.body
          ? { body: route.schema.body }
          : {}),
      response: responses,
      // An optional route answers with or without the cookie: the empty requirement says so.
      security: securityOf(route),
      // A vendor extension: who may call the route, as the guard reads it.
      ...{ 'x-access': typeof route.access === 'object' ? `permission ${route.access.permission}` : route.access },
      // And the feature the tenant's plan must grant (403 FEATURE_NOT_IN_PLAN without it), when gated.
      ...(guard.feature !== undefined ? { 'x-feature': guard.feature } : {}),
      // A list that exports: its answer's CSV and NDJSON media types are added to the document (openapi/document.ts).
      ...(route.transaction !== 'none' && route.exports ? { 'x-exports': route.exports.name } : {}),
    },
    onRequest: early ? [beforeBody, early] : beforeBody,
    preValidation: [
      ...(changesState ? [formCheck] : []),
      ...(multipart ? [multipartCheck(bodyLimit)] : []),
      ...(protectedFields ? [protectedFields] : []),
      ...(noBody ? [refuseBody] : []),
    ],
    // The request's id is in scope for all its work: every event it publishes records it.
    handler: (request: FastifyRequest, reply: FastifyReply) => withRequestId(request.id, () => respond(request, reply)),
  });
}

/**
 * A public route's earlyAnswer as an onRequest hook, for the requests the front door left to the
 * router: an answer it gives is sent with no body; none, or a throw, leaves the request to
 * validation and the handler, which answer it properly.
 */
function earlyAnswerHook(route: AnyRoute, services: Services) {
  const answer = route.access === 'public' && route.transaction === 'none' ? route.earlyAnswer : undefined;
  if (!answer) return undefined;
  return (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    let answered: EarlyAnswer | undefined;
    try {
      answered = answer(
        {
          method: request.method,
          headers: request.headers,
          params: request.params as Record<string, string>,
          tenant: request.tenant!,
        },
        services,
      );
    } catch {
      // The handler meets the same input and refuses it with its problem.
    }
    if (answered) reply.code(answered.status).headers(answered.headers).send();
    else done();
  };
}

/**
 * A body naming a command-owned field is refused with every route that writes it, and PATCH refuses
 * immutable fields, before schema validation would call them merely unknown. Fields the service
 * sets (system and read-only fields) are refused on every write. A singleton's PUT is a create.
 */
export function protectedFieldCheck(entity: ResolvedEntity, route: AnyRoute) {
  const check = protectedBodyCheck(entity, route);
  return check ? onRequestBody(check) : undefined;
}

/** The route's protected-field check on a body object, for a create (or a singleton's PUT) and a PATCH. */
function protectedBodyCheck(
  entity: ResolvedEntity,
  route: AnyRoute,
): ((body: Record<string, unknown>) => void) | undefined {
  const isCreate =
    route.operationId === entity.names.operationId('create') ||
    route.operationId === entity.names.operationId('replace');
  const isPatch = route.operationId === entity.names.operationId('update');
  if (!isCreate && !isPatch) return undefined;
  return bodyFieldCheck(entity, isPatch ? 'patch' : 'create');
}

/** A body check as a preValidation hook: on a body object, as parsed. */
function onRequestBody(check: (body: Record<string, unknown>) => void) {
  return async (request: FastifyRequest) => {
    const body = request.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
    check(body as Record<string, unknown>);
  };
}

/**
 * The protected-field refusals and the normalisers of a create's or a PATCH's body, on a body
 * object (in place): what protectedFieldCheck runs on a request, and an import on each of its rows.
 */
export function bodyFieldCheck(
  entity: ResolvedEntity,
  kind: 'create' | 'patch',
): (body: Record<string, unknown>) => void {
  const isPatch = kind === 'patch';
  const normalisers = Object.entries(entity.def.normalise ?? {}).filter(
    (entry): entry is [string, (value: string) => string] => entry[1] !== undefined,
  );
  return (fields) => {
    for (const key of Object.keys(fields)) {
      // Own members only: a body member named constructor or toString is no field (the schema refuses it).
      const owners = Object.hasOwn(entity.commandOwners, key) ? entity.commandOwners[key] : undefined;
      if (owners) {
        // `route` (the first owner) stays for clients written before a field could have several.
        const routes = owners.map((c) => entity.commandRoute(c));
        throw problem('FIELD_COMMAND_OWNED', `${key} is set only by ${routes.join(' or ')}`, {
          extensions: { field: key, route: routes[0], routes },
        });
      }
      if (isPatch && entity.immutable.includes(key)) {
        throw problem('FIELD_IMMUTABLE', `${key} cannot be changed after creation`, { extensions: { field: key } });
      }
      if (key === 'id' || key === 'createdAt' || key === 'updatedAt' || entity.readOnly.includes(key)) {
        const reason = entity.def.readOnlyReasons?.[key] ?? 'set by the service';
        throw problem('FIELD_IMMUTABLE', `${key} is ${reason}`, { extensions: { field: key } });
      }
    }
    // Then the values are put in their stored form, so the schema checks what will be stored.
    for (const [field, normalise] of normalisers) {
      const value = fields[field];
      if (typeof value === 'string') fields[field] = normalise(value);
    }
  };
}

/**
 * What the route's transaction may publish: its declared list, plus, for an entity's routes, the
 * entity's lifecycle events and hook events (its hooks run in the same transaction).
 */
function publishAllowList(route: AnyRoute, entity: ResolvedEntity | undefined): PublishAllowList {
  const events = new Set<string>(route.publishes ?? []);
  if (entity) {
    for (const event of Object.values(entity.names.events)) events.add(event);
    for (const event of entity.def.hookPublishes ?? []) events.add(event);
  }
  return { events, by: `${route.method} ${route.url} (${route.operationId})` };
}

/** A body sent to a route that takes none (no-body.ts), once it is parsed (a form was refused before). */
async function refuseBody(request: FastifyRequest): Promise<void> {
  const refusal = bodyNotTaken(request.body);
  if (refusal) throw refusal;
}

const skipBodyValidation: FastifySchemaCompiler<TSchema> = (input) =>
  input.httpPart === 'body' ? (value: unknown) => ({ value }) : typeboxValidatorCompiler(input);

const MULTIPART_PROBLEMS = {
  411: problemResponse('No Content-Length (LENGTH_REQUIRED): a form is measured before it is read'),
  415: problemResponse('Not a multipart/form-data body (UNSUPPORTED_MEDIA_TYPE)'),
};

/**
 * A multipart route reads only a form, and only one whose Content-Length is within the route's
 * body limit: Node reads no byte past the Content-Length, so the whole form is bounded before the
 * handler streams it, whatever its parts. Checked before the guard, as fastify checks a JSON body.
 */
function multipartCheck(limit: number) {
  return async (request: FastifyRequest) => {
    if (!request.isMultipart()) throw problem('UNSUPPORTED_MEDIA_TYPE', 'This route takes a multipart/form-data body');
    const length = request.headers['content-length'];
    if (length === undefined) throw problem('LENGTH_REQUIRED', 'A multipart body needs a Content-Length');
    if (Number(length) > limit) throw problem('PAYLOAD_TOO_LARGE', `The request body is larger than ${limit} bytes`);
  };
}

/**
 * A request whose only failing values are fields with a code of their own (invalidCodes, e.g.
 * slug → SLUG_INVALID) answers that code, with the same pointers VALIDATION_FAILED would carry.
 */
export function fieldCodeFormatter(codes: Readonly<Record<string, ProblemCode | undefined>>) {
  return (issues: ValidationIssue[], part: string): Error => {
    if (part !== 'body') return validationProblem(issues, part);
    const fieldOf = (issue: ValidationIssue) => (issue.instancePath ?? '').split('/')[1];
    const relevant = issues.filter((issue) => issue.keyword !== 'boolean');
    const code = codes[fieldOf(relevant[0] ?? {}) ?? ''];
    const only = code !== undefined && relevant.every((issue) => codes[fieldOf(issue) ?? ''] === code);
    return validationProblem(issues, part, only ? code : 'VALIDATION_FAILED');
  };
}

/**
 * The credentials an operation accepts, for OpenAPI: none for a public route; the session cookie,
 * and a personal access token unless the route takes the cookie only; an optional route also
 * answers with neither (the empty requirement).
 */
function securityOf(route: AnyRoute): Record<string, string[]>[] {
  if (route.access === 'public') return [];
  const cookie: Record<string, string[]> = { cookieAuth: [] };
  const schemes = route.bearer === false ? [cookie] : [cookie, { bearerAuth: [] }];
  return route.access === 'optional' ? [{}, ...schemes] : schemes;
}
