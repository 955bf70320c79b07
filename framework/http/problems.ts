import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { ProblemError, problem, type FieldError } from '../errors.ts';
import { pagingRefusal } from '../operations/paging.ts';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

interface ValidationIssue {
  instancePath?: string;
  message?: string;
  keyword?: string;
  params?: Record<string, unknown>;
}

/** Maps PostgreSQL's constraint errors to problems a caller can act on; anything else stays a 500. */
function fromDatabaseError(err: { code?: string; constraint?: string; detail?: string }): ProblemError | undefined {
  switch (err.code) {
    case '23505':
      return problem('ALREADY_EXISTS', `A resource with the same unique value already exists${err.constraint ? ` (${err.constraint})` : ''}`);
    case '23503':
      return problem('VALIDATION_FAILED', 'A referenced resource does not exist');
    case '23514':
    case '22001':
    case '22P02':
    case '22007':
    case '22008':
      return problem('VALIDATION_FAILED', 'A value is outside what the field accepts');
    default:
      return undefined;
  }
}

function fromValidation(err: FastifyError): ProblemError {
  const part = err.validationContext ?? 'body';
  const errors: FieldError[] = ((err.validation ?? []) as ValidationIssue[])
    .filter((issue) => issue.keyword !== 'boolean')
    .flatMap((issue) => {
      const at = `/${part}${issue.instancePath ?? ''}`;
      // Missing and unknown properties point at the property itself, one entry each, so a form can mark the field.
      if (issue.keyword === 'additionalProperties') {
        const extra = (issue.params?.additionalProperties as string[] | undefined) ?? [];
        return extra.map((name) => ({ pointer: `${at}/${name}`, message: `unknown property: ${name}` }));
      }
      if (issue.keyword === 'required') {
        const missing = (issue.params?.requiredProperties as string[] | undefined) ?? [];
        if (missing.length > 0) return missing.map((name) => ({ pointer: `${at}/${name}`, message: 'is required' }));
      }
      return [{ pointer: at, message: pagingRefusal(at, issue.keyword) ?? issue.message ?? 'invalid' }];
    });
  return problem('VALIDATION_FAILED', `The request ${part} does not match the schema`, { errors });
}

export function toProblem(err: unknown): ProblemError {
  if (err instanceof ProblemError) return err;
  const e = err as FastifyError & { code?: string };
  if (e.validation) return fromValidation(e);
  const db = fromDatabaseError(e as never);
  if (db) return db;
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return problem('MALFORMED_REQUEST', 'The body is not valid JSON');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return problem('PAYLOAD_TOO_LARGE', 'The request body is too large');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return problem('UNSUPPORTED_MEDIA_TYPE', 'This route does not accept that content type');
    default:
      break;
  }
  if (e instanceof SyntaxError || e.statusCode === 400) return problem('MALFORMED_REQUEST', 'The request could not be parsed');
  if (e.statusCode === 413) return problem('PAYLOAD_TOO_LARGE', 'The request body is too large');
  if (e.statusCode === 415) return problem('UNSUPPORTED_MEDIA_TYPE', 'This route does not accept that content type');
  return problem('INTERNAL', 'An unexpected error occurred; it has been logged');
}

export function sendProblem(reply: FastifyReply, err: ProblemError): FastifyReply {
  return reply.code(err.status).type(PROBLEM_CONTENT_TYPE).send(err.toDocument());
}

/** Every failure leaves as application/problem+json: never a stack trace or SQL text. */
export function installProblemHandlers(app: FastifyInstance): void {
  app.setErrorHandler((err, request, reply) => {
    const mapped = toProblem(err);
    if (mapped.status >= 500) request.log.error({ err }, 'request failed');
    return sendProblem(reply, mapped);
  });
  app.setNotFoundHandler((request, reply) => sendProblem(reply, problem('ROUTE_NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}`)));
}
