import type { FastifyReply } from 'fastify';
import type { TxContext } from './transaction.ts';

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

/**
 * The one primitive every password check goes through: whether `plain` matches an argon2 `hash`,
 * whose algorithm and parameters are read from the hash itself. It throws on a hash argon2 cannot
 * read. The app's is argon2's own (access/password-verifier.ts, argon2Verifier); buildApp takes
 * another through AppOptions.passwordVerifier, the documented seam through which a test counts the
 * verifications a request runs (test/modules/auth/login.test.ts proves that every sign-in refusal
 * runs exactly one).
 */
export interface PasswordVerifier {
  verify(hash: string, plain: string): Promise<boolean>;
}

/**
 * The one primitive every stored password hash comes from: an argon2id hash of `plain` with the
 * installation's parameters (access/password-verifier.ts, argon2Hasher). buildApp takes another
 * through AppOptions.passwordHasher, the seam through which a test watches where hashing runs
 * (test/modules/auth/password-work-holds-no-connection.test.ts proves no transaction is open then).
 */
export interface PasswordHasher {
  hash(plain: string): Promise<string>;
}

/**
 * Signs links that open without a session until they expire (a tenant's export archive), with a
 * key of the installation's secret (framework/access/signed-links.ts, LinkSeal).
 */
export interface SignedLinks {
  /** The signature of a link to `what` (e.g. tenant-export:<tenant>:<id>) until `expires` (Unix seconds). */
  sign(what: string, expires: number): string;
  /** Whether the signature is this installation's for `what` until `expires`, and `expires` is not past `now`. */
  opens(what: string, expires: number, signature: string, now: Date): boolean;
}
