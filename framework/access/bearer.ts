import type { FastifyRequest } from 'fastify';

/**
 * Personal access tokens on the wire: `Authorization: Bearer <token>`. The framework resolves the
 * token in a transaction's opening statement (context/opening.ts, enterWithTokenText) from the
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

export type { BearerAttemptLimit } from '../contracts/access.ts';
