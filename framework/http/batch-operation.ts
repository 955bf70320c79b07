import type { FastifyReply, FastifySchemaValidationError } from 'fastify';
import type { TSchema } from 'typebox';
import type { RouteDefinition } from '../entity/define.ts';
import type {
  BatchPrepareScope,
  BatchRequestScope,
  DirectAnswer,
  DirectItem,
  DirectOperation,
} from '../bulk/batch-routes.ts';
import { parseAnswer } from '../bulk/batch-routes.ts';
import { problem } from '../errors.ts';
import { STATE_CHANGING_METHODS } from '../access/cross-site.ts';
import { inBatch, preparedInBatch, type RoutePlan } from './request-strategies.ts';
import { typeboxValidatorCompiler } from './validation.ts';
import { validationProblem, type ValidationIssue } from './problems.ts';
import { bodyNotTaken } from './no-body.ts';

/** The schemas of a route's request parts, as the route gives them to fastify. */
export interface RequestSchemas {
  readonly params?: TSchema;
  readonly querystring?: TSchema;
  readonly headers?: TSchema;
  readonly body?: TSchema;
}

/** What register-route.ts settles once for a route, and its direct operation reuses. */
export interface DirectParts {
  readonly plan: RoutePlan;
  readonly route: RouteDefinition;
  readonly schemas: RequestSchemas;
  /** Its answers' schemas by status, as fastify serialises them. */
  readonly responses: Readonly<Record<string, TSchema>>;
  /** The route's own wording of a validation failure (a field's code), if it has one. */
  readonly errorFormatter?: (issues: ValidationIssue[], part: string) => Error;
  /** The protected-field refusals and normalisers of a create's or a PATCH's body. */
  readonly bodyCheck?: (body: Record<string, unknown>) => void;
  /** The route takes no body (no-body.ts): one sent is refused. */
  readonly noBody: boolean;
  readonly bodyLimit: number;
}

type Validator = (value: unknown) => { value?: unknown; error?: unknown };
type Part = 'params' | 'body' | 'querystring' | 'headers';

/**
 * A transaction route's operation for one request of a batch, called without a request of its
 * own (bulk/batch-routes.ts). It does, in the same order, what the request path does for a request
 * sent alone (register-route.ts, then fastify's body limit and validation, then the route's
 * strategy), over what the batch resolved once (its tenant, caller, headers and transaction):
 *
 * - the refusals before the body: an operator route outside the operator tenant, the cross-site
 *   rule, no credential where the route needs a caller (a request carries no Accept, so
 *   negotiation takes the route's first type and refuses nothing);
 * - the route's body limit, on the request's own body;
 * - the protected-field checks (a JSON body is never a form);
 * - the route's schemas, compiled here at boot by the compiler fastify compiles them with, in
 *   fastify's order (params, body, query string, headers) and with the route's error wording;
 * - the guard's verdict on the batch's caller and the handler in the batch's transaction
 *   (request-strategies.ts, inBatch);
 * - its answer serialised with the route's response schema for its status, as it would be sent.
 *
 * The handler is given the batch's request and reply: what it reads of the request (the tenant,
 * the caller's address and cookies) is the batch's, as it was when the request was dispatched with
 * the batch's headers; the status and headers it sets are taken as its answer's, then the batch's
 * reply is put back as it was.
 */
export function directOperation(parts: DirectParts): DirectOperation {
  const { plan, route, schemas, responses, bodyCheck, bodyLimit } = parts;
  const { guard } = plan;
  const changesState = STATE_CHANGING_METHODS.has(route.method);
  const compile = (part: Part, schema: TSchema | undefined): Validator | undefined =>
    schema === undefined
      ? undefined
      : (typeboxValidatorCompiler({ schema, method: route.method, url: route.url, httpPart: part }) as Validator);
  const validators = {
    params: compile('params', schemas.params),
    body: compile('body', schemas.body),
    querystring: compile('querystring', schemas.querystring),
    headers: compile('headers', schemas.headers),
  };
  const formatter =
    parts.errorFormatter ?? ((issues: ValidationIssue[], part: string) => validationProblem(issues, part));
  const validated = (part: Part, value: unknown): unknown => {
    const validator = validators[part];
    if (!validator) return value;
    const result = validator(value === undefined ? null : value);
    if (result.error) throw formatter(result.error as FastifySchemaValidationError[] as ValidationIssue[], part);
    return 'value' in result ? result.value : value;
  };
  const handle = inBatch(plan, route);
  const prepareStep = preparedInBatch(plan, route);

  /** What the request path checks and validates before the strategy: the request's parts as the handler gets them. */
  const admitted = (scope: BatchRequestScope, item: DirectItem) => {
    // Before the body is read (register-route.ts, beforeBody).
    guard.admitTenant(scope.tenant);
    const bearer = plan.acceptsBearer ? scope.bearer : undefined;
    if (changesState && bearer === undefined && scope.crossSite) throw scope.crossSite;
    if (guard.requiresCaller && bearer === undefined && !scope.request.cookies[plan.cookieName])
      guard.admitCaller(null);
    // The body as the route would have parsed it: the text the request would have carried, within
    // the route's limit (measured only when the whole batch is larger), read back into a copy of
    // its own (so a value JSON cannot carry, such as 1e400's Infinity, arrives as it would: null).
    const text = item.body === undefined ? undefined : JSON.stringify(item.body);
    if (text !== undefined && scope.bodyBytes > bodyLimit && Buffer.byteLength(text) > bodyLimit)
      throw problem('PAYLOAD_TOO_LARGE', 'The request body is too large');
    const sent = text === undefined ? undefined : (JSON.parse(text) as unknown);
    if (bodyCheck && typeof sent === 'object' && sent !== null && !Array.isArray(sent))
      bodyCheck(sent as Record<string, unknown>);
    const unwanted = parts.noBody ? bodyNotTaken(sent) : undefined;
    if (unwanted) throw unwanted;
    const params = validated('params', item.params);
    const body = validated('body', sent);
    const query = validated('querystring', {});
    // A copy: the headers are the batch's, and a schema's defaults are written into what it validates.
    if (validators.headers) validated('headers', { ...scope.headers });
    return {
      params: params as never,
      query: query as never,
      body: body as never,
      request: scope.request,
      reply: scope.reply,
      services: plan.services,
    };
  };

  return {
    operationId: route.operationId,
    ...(route.beforeTransaction
      ? {
          async prepare(scope: BatchPrepareScope, item: DirectItem) {
            return prepareStep(scope.session, admitted(scope, item));
          },
        }
      : {}),
    async run(scope, item, prepared) {
      const base = admitted(scope, item);
      const { reply } = scope;
      const before = heldReply(reply);
      try {
        const payload = await handle(scope.tx, base, prepared);
        const status = reply.statusCode;
        const location = reply.getHeader('location');
        const answer: DirectAnswer = {
          status,
          body: serialised(reply, responses, status, payload),
          ...(typeof location === 'string' ? { location } : {}),
        };
        return answer;
      } finally {
        before.restore();
      }
    },
  };
}

/** The reply's status and headers now, to put back once a request has set its own. */
function heldReply(reply: FastifyReply): { restore(): void } {
  const status = reply.statusCode;
  const headers = reply.getHeaders();
  return {
    restore() {
      for (const [name, value] of Object.entries(reply.getHeaders())) {
        if (!(name in headers)) reply.removeHeader(name);
        else if (headers[name] !== value) reply.header(name, headers[name]);
      }
      reply.code(status);
    },
  };
}

/**
 * The answer's body as a client would read it: serialised as fastify serialises it (the response
 * schema of its status, or of its class, else JSON), then read back; no body for a 204, a 304 or
 * a handler that returned nothing.
 */
function serialised(
  reply: FastifyReply,
  responses: Readonly<Record<string, TSchema>>,
  status: number,
  payload: unknown,
): unknown {
  if (status === 204 || status === 304 || payload === undefined) return null;
  if (typeof payload === 'string') return parseAnswer(payload);
  if (Buffer.isBuffer(payload)) return parseAnswer(payload.toString('utf8'));
  if (typeof payload === 'object' && payload !== null && typeof (payload as { pipe?: unknown }).pipe === 'function')
    throw problem('INTERNAL', 'a request of the batch answered with a stream, which a batch cannot carry');
  const schema = responses[status] ?? responses[`${String(status)[0]}xx`] ?? responses.default;
  return JSON.parse(
    schema
      ? reply.serializeInput(payload as Record<string, unknown>, schema as Record<string, unknown>)
      : JSON.stringify(payload),
  ) as unknown;
}
