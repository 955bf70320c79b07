import { problem, type ProblemError } from '../errors.ts';

/**
 * The database's own failures as problems a client can retry: a statement PostgreSQL cancelled at
 * `database.statement_timeout_ms` (DB_TIMEOUT), and a server that is gone, going or not yet back
 * (DB_UNAVAILABLE). Each asks the client to retry later (Retry-After), never a 500: the request's
 * transaction did not commit, and the service recovers by itself once PostgreSQL answers again.
 */

/** Retry-After of DB_TIMEOUT: the same statement is likely to be slow again at once. */
export const DB_TIMEOUT_RETRY_AFTER_SECONDS = 5;
/** Retry-After of DB_UNAVAILABLE: a restarting server is usually back within seconds. */
export const DB_UNAVAILABLE_RETRY_AFTER_SECONDS = 1;

// SQLSTATEs of a server that ended or refused the session: connection exceptions (class 08),
// admin_shutdown, crash_shutdown, cannot_connect_now (starting up or shutting down), and
// too_many_connections.
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300']);
// What node's socket and pg say when there is no server to talk to, or the socket broke under a
// query (pg's own messages carry no SQLSTATE).
const UNAVAILABLE_SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
]);
const UNAVAILABLE_MESSAGES =
  /^(Connection terminated|Client has encountered a connection error and is not queryable|Client was closed and is not queryable|terminating connection)/;

type DatabaseError = { code?: unknown; message?: unknown; severity?: unknown };

/** The problem for a failure of the database itself; undefined for anything else (a constraint, a bug). */
export function databaseFailureProblem(err: unknown): ProblemError | undefined {
  if (!err || typeof err !== 'object') return undefined;
  const { code, message } = err as DatabaseError;
  if (code === '57014') {
    return withCause(
      problem(
        'DB_TIMEOUT',
        'A database statement ran past its time limit and was cancelled; nothing was saved. Retry later',
        {
          extensions: { retryAfterSeconds: DB_TIMEOUT_RETRY_AFTER_SECONDS },
        },
      ),
      err,
    );
  }
  const unavailable =
    (typeof code === 'string' &&
      (code.startsWith('08') || UNAVAILABLE_STATES.has(code) || UNAVAILABLE_SOCKET_CODES.has(code))) ||
    (typeof message === 'string' && UNAVAILABLE_MESSAGES.test(message));
  if (!unavailable) return undefined;
  return withCause(
    problem('DB_UNAVAILABLE', 'The database cannot be reached right now; retry shortly', {
      extensions: { retryAfterSeconds: DB_UNAVAILABLE_RETRY_AFTER_SECONDS },
    }),
    err,
  );
}

function withCause(p: ProblemError, cause: unknown): ProblemError {
  p.cause = cause;
  return p;
}
