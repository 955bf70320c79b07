import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TxContext } from '../context/tx.ts';

/**
 * Personal access tokens on the wire: `Authorization: Bearer <token>`. The framework resolves the
 * token in a transaction's opening statement (context/opening.ts, ENTER_WITH_TOKEN) from the
 * identity table access_tokens, which a module provides (modules/auth): only the SHA-256 of a
 * token is stored, as for session ids (session-cookie.ts, hashSecret).
 */

/** What every raw token starts with: tells a person (and a secret scanner) what leaked. */
export const ACCESS_TOKEN_PREFIX = 'tnt_pat_';

/** A token is the prefix and 256 random bits in base64url (43 characters); anything longer is not one. */
const MAX_TOKEN_LENGTH = 200;

/**
 * The bearer token a request carries, or undefined when it carries none. A header that names the
 * Bearer scheme with no usable token gives the empty string: a credential that fails, not none.
 */
export function bearerTokenOf(request: Pick<FastifyRequest, 'headers'>): string | undefined {
  const value = request.headers.authorization;
  if (typeof value !== 'string') return undefined;
  const match = /^\s*bearer(?:\s+|$)(.*)$/is.exec(value);
  if (!match) return undefined;
  const token = match[1]!.trim();
  // Anything but one token after the scheme is a credential that fails, never no credential.
  return token.length > MAX_TOKEN_LENGTH || /\s/.test(token) ? '' : token;
}

/**
 * How failed bearer attempts are counted and limited, provided by a module
 * (ModuleDefinition.bearerAttempts; modules/auth counts them with failed logins, per client address).
 */
export interface BearerAttemptLimit {
  /**
   * Runs first in a bearer request's transaction, before the token counts: throws the refusal
   * (setting its headers on reply, e.g. Retry-After) when this client address has failed too often.
   */
  refuseIfOverLimit(tx: TxContext, source: string, reply: FastifyReply): Promise<void>;
  /** Counts one failed attempt, in a transaction of its own (the request's rolled back). */
  recordFailure(tx: TxContext, source: string): Promise<void>;
}
