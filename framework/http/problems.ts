import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ProblemError, notFound, problem, type FieldError, type ProblemCode } from '../errors.ts';
import { pagingRefusal } from '../operations/paging.ts';
import { uniqueViolationProblem } from '../db/unique-keys.ts';
import { databaseFailureProblem } from '../db/failures.ts';
import { answerConnect, collectMethods, methodRefusal } from './methods.ts';
import { CURRENCY_FORMAT } from '../entity/money.ts';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export interface ValidationIssue {
  instancePath?: string;
  message?: string;
  keyword?: string;
  params?: Record<string, unknown>;
}

/** Maps PostgreSQL's constraint errors to problems a caller can act on; anything else stays a 500. */
function fromDatabaseError(err: { code?: string; constraint?: string; detail?: string }): ProblemError | undefined {
  switch (err.code) {
    case '23505':
    case '23P01':
      // Named by the field the key protects (framework/db/unique-keys.ts), never by the constraint.
      return uniqueViolationProblem(err);
    case '23503':
      return problem('VALIDATION_FAILED', 'A referenced resource does not exist');
    case '23502':
      return problem('VALIDATION_FAILED', 'A required value is missing');
    case '23514':
    case '22001':
    case '22003':
    case '22P02':
    case '22007':
    case '22008':
      return problem('VALIDATION_FAILED', 'A value is outside what the field accepts');
    default:
      return undefined;
  }
}

function fromValidation(err: FastifyError): ProblemError {
  return validationProblem((err.validation ?? []) as ValidationIssue[], err.validationContext ?? 'body');
}

const valueText = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value));

/**
 * The sentence for one failing value: the validator's own, except where it hides what would be
 * accepted: an enum names its allowed values ("must be one of: low, medium, high, critical"), a
 * constant its value.
 */
function issueMessage(issue: ValidationIssue): string {
  const params = issue.params ?? {};
  if (issue.keyword === 'enum' && Array.isArray(params.allowedValues))
    return `must be one of: ${params.allowedValues.map(valueText).join(', ')}`;
  if (issue.keyword === 'const' && 'allowedValue' in params) return `must be ${valueText(params.allowedValue)}`;
  if (issue.keyword === 'format' && params.format === CURRENCY_FORMAT)
    return 'must be the ISO 4217 code of a currency in use, like EUR';
  return issue.message ?? 'invalid';
}

/**
 * A path parameter holding NUL, or one that must be a UUID and is not, names nothing that can exist:
 * it is the same 404 as any id that is not there (docs/api-conventions.md), never a 422 telling
 * such an id apart from an unknown one.
 */
const namesNothing = (issue: ValidationIssue) =>
  issue.keyword === 'nul' || (issue.keyword === 'format' && issue.params?.format === 'uuid');

/** A refused request part: one pointer per failing value (missing and unknown properties each their own). */
export function validationProblem(
  issues: ValidationIssue[],
  part: string,
  code: ProblemCode = 'VALIDATION_FAILED',
): ProblemError {
  if (part === 'params' && issues.some(namesNothing)) return notFound();
  // An enum's refusal names every value it takes: a type refusal of the same value says less.
  const enums = new Set(issues.filter((issue) => issue.keyword === 'enum').map((issue) => issue.instancePath ?? ''));
  const errors: FieldError[] = issues
    .filter((issue) => issue.keyword !== 'boolean')
    .filter((issue) => issue.keyword !== 'type' || !enums.has(issue.instancePath ?? ''))
    .flatMap((issue) => {
      const at = `/${part}${issue.instancePath ?? ''}`;
      // Missing and unknown properties point at the property itself, one entry each, so a form can mark the field.
      if (issue.keyword === 'additionalProperties') {
        const extra = (issue.params?.additionalProperties as string[] | undefined) ?? [];
        return extra.map((name) => ({ pointer: `${at}/${name}`, message: `unknown property: ${name}` }));
      }
      if (issue.keyword === 'required') {
        const missing = (issue.params?.requiredProperties as string[] | undefined) ?? [];
        // A query parameter looked for in the body (a form field, a JSON member) is missing from the query: say where it goes.
        const message = (name: string) =>
          part === 'querystring' && issue.instancePath === ''
            ? `is required: send it in the query string (?${name}=...), not in the body`
            : 'is required';
        if (missing.length > 0) return missing.map((name) => ({ pointer: `${at}/${name}`, message: message(name) }));
      }
      return [{ pointer: at, message: pagingRefusal(at, issue.keyword) ?? issueMessage(issue) }];
    });
  return problem(code, `The request ${part} does not match the schema`, { errors });
}

export function toProblem(err: unknown): ProblemError {
  if (err instanceof ProblemError) return err;
  const e = err as FastifyError & { code?: string };
  if (e.validation) return fromValidation(e);
  const db = fromDatabaseError(e as never) ?? databaseFailureProblem(e);
  if (db) return db;
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return problem('MALFORMED_REQUEST', 'The body is not valid JSON');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return problem('PAYLOAD_TOO_LARGE', 'The request body is too large');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return problem('UNSUPPORTED_MEDIA_TYPE', 'This route does not accept that content type');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return problem('MALFORMED_REQUEST', 'The body does not match its Content-Length');
    default:
      break;
  }
  if (e instanceof SyntaxError) return problem('MALFORMED_REQUEST', 'The request could not be parsed');
  // fastify and its plugins (static files, ranges) refuse with a status of their own: it stays.
  const status = typeof e.statusCode === 'number' ? e.statusCode : 0;
  if (status >= 400 && status < 500)
    return problem(
      CLIENT_ERRORS[status] ?? 'MALFORMED_REQUEST',
      CLIENT_ERROR_DETAIL[status] ?? 'The request was refused',
    );
  return problem('INTERNAL', 'An unexpected error occurred; it has been logged');
}

/** The code of a 4xx a library raised; a status not listed here answers 400 MALFORMED_REQUEST. */
const CLIENT_ERRORS: Readonly<Record<number, ProblemCode>> = {
  400: 'MALFORMED_REQUEST',
  401: 'AUTH_REQUIRED',
  403: 'FORBIDDEN',
  404: 'ROUTE_NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  406: 'NOT_ACCEPTABLE',
  408: 'REQUEST_TIMEOUT',
  409: 'CONFLICT',
  411: 'LENGTH_REQUIRED',
  412: 'PRECONDITION_FAILED',
  413: 'PAYLOAD_TOO_LARGE',
  414: 'URI_TOO_LONG',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  416: 'RANGE_NOT_SATISFIABLE',
  422: 'VALIDATION_FAILED',
  429: 'RATE_LIMITED',
  431: 'HEADERS_TOO_LARGE',
};

// The library's own message may name files or internals: the detail is ours.
const CLIENT_ERROR_DETAIL: Readonly<Record<number, string>> = {
  400: 'The request could not be parsed',
  403: 'The request is not allowed',
  404: 'Nothing is served at this path',
  413: 'The request body is too large',
  415: 'This route does not accept that content type',
};

/** Every 429 asks the client to wait this long when the problem does not say how long. */
const DEFAULT_RETRY_AFTER_SECONDS = 60;

/**
 * A problem that says when to retry (retryAfterSeconds) sets Retry-After, whichever route raised
 * it; a 429 always carries one (the admin shell's error pages too: admin/errors.ts).
 */
export function retryAfter(err: ProblemError): number | undefined {
  const seconds = err.extensions.retryAfterSeconds;
  if (typeof seconds === 'number' && Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds);
  return err.status === 429 ? DEFAULT_RETRY_AFTER_SECONDS : undefined;
}

export function sendProblem(reply: FastifyReply, err: ProblemError): FastifyReply {
  const seconds = retryAfter(err);
  if (seconds !== undefined) reply.header('retry-after', String(seconds));
  // The request's id (its X-Request-Id) goes with every problem, for a report to name the request.
  return reply
    .code(err.status)
    .type(PROBLEM_CONTENT_TYPE)
    .header('x-request-id', reply.request.id)
    .send({ ...err.toDocument(), requestId: reply.request.id });
}

/** Headers every answer carries, the ones written straight to the socket included. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = { 'x-content-type-options': 'nosniff' };

/**
 * Failures fastify meets before routing (a path that is not valid percent-encoding, a path
 * parameter over the router's length limit) answer problems too.
 */
export function frameworkErrorProblem(err: FastifyError, _request: FastifyRequest, reply: FastifyReply): FastifyReply {
  // No hook runs for these: the headers every answer carries are set here.
  reply.headers(SECURITY_HEADERS);
  return sendProblem(reply, frameworkProblem(err));
}

/** The problem of a failure fastify meets before routing. */
export function frameworkProblem(err: FastifyError): ProblemError {
  switch (err.code) {
    case 'FST_ERR_BAD_URL':
      return problem('MALFORMED_REQUEST', 'The path is not valid percent-encoding');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return problem('URI_TOO_LONG', 'A path segment is longer than the router accepts');
    default:
      return toProblem(err);
  }
}

/**
 * Requests Node's HTTP parser refuses (unknown method, bad Content-Length, headers over the 16 KB
 * limit, a timeout) never reach fastify: the answer is written to the socket, as a problem.
 */
export function clientErrorProblem(err: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody left to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const refused =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? problem('HEADERS_TOO_LARGE', 'The request headers are over the 16 KB limit')
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? problem('REQUEST_TIMEOUT', 'The request was not received in time')
        : problem('MALFORMED_REQUEST', 'The request is not valid HTTP');
  const body = JSON.stringify(refused.toDocument());
  const headers = {
    'content-type': PROBLEM_CONTENT_TYPE,
    'content-length': String(Buffer.byteLength(body)),
    ...SECURITY_HEADERS,
    connection: 'close',
  };
  if (socket.writable) {
    const head = Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    socket.write(`HTTP/1.1 ${refused.status} ${STATUS_CODES[refused.status]}\r\n${head}\r\n${body}`);
  }
  socket.destroy(err);
}

/**
 * Every failure leaves as application/problem+json: never a stack trace or SQL text. Call before
 * any route is declared: a path no route serves is 404 ROUTE_NOT_FOUND, a known path asked with a
 * method it does not declare 405 METHOD_NOT_ALLOWED with Allow (methods.ts), CONNECT included.
 */
export function installProblemHandlers(app: FastifyInstance): void {
  collectMethods(app);
  answerConnect(app.server, SECURITY_HEADERS);
  app.setErrorHandler((err, request, reply) => {
    const mapped = toProblem(err);
    if (mapped.status >= 500) request.log.error({ err }, 'request failed');
    return sendProblem(reply, mapped);
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(
      reply,
      methodRefusal(request, (allow) => reply.header('allow', allow)) ??
        problem('ROUTE_NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}`),
    ),
  );
}
