import { problem } from '../../framework/errors.ts';
import { argon2Hasher, type PasswordHasher, type PasswordVerifier } from '../../framework/access/password-verifier.ts';

export { ARGON2_OPTIONS } from '../../framework/access/password-verifier.ts';

// The user module owns the users table and its password_hash column, so hashing and the policy
// live here: its set-password command hashes, and the sign-in area (modules/auth) verifies and
// hashes with these and stores a hash only through usersService.setPasswordHash.

/**
 * Password policy: 8 to 1024 characters, nothing else. Length is what resists guessing; the upper
 * bound only keeps a single request from costing more than hashing any ordinary password.
 */
export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 1024;

/**
 * A hash of a random secret nobody knows, made with ARGON2_OPTIONS. Verifying against it when an
 * address matches no usable account costs what a real verification costs, so timing does not
 * tell whether an address exists.
 */
export const DUMMY_HASH =
  '$argon2id$v=19$m=19456,p=1,t=2$u/EpxtZW8yWAZ0cUlAogtw$KLBHGDodgatFp30YuFsX1s7AgC/aVFeRNZHXj9snJ9A';

/** Returns the first broken policy rule as a sentence, or undefined. */
export function passwordPolicyViolation(plain: string): string | undefined {
  const length = [...plain].length;
  if (length < PASSWORD_MIN_LENGTH) return `a password has at least ${PASSWORD_MIN_LENGTH} characters`;
  if (length > PASSWORD_MAX_LENGTH) return `a password has at most ${PASSWORD_MAX_LENGTH} characters`;
  return undefined;
}

/** Throws 422 VALIDATION_FAILED pointing at the given body field when the policy is broken. */
export function assertPasswordPolicy(plain: string, pointer = '/body/password'): void {
  const violation = passwordPolicyViolation(plain);
  if (violation) throw problem('VALIDATION_FAILED', violation, { errors: [{ pointer, message: violation }] });
}

/**
 * The argon2id hash to store for plain, through the app's hasher (services.passwordHasher) when the
 * caller has one. It costs tens of milliseconds of CPU: call it with no transaction open, so no pool
 * connection is held meanwhile.
 */
export function hashPassword(plain: string, hasher: PasswordHasher = argon2Hasher): Promise<string> {
  return hasher.hash(plain);
}

/**
 * True when plain matches hash, checked through the app's verifier (services.passwordVerifier). A
 * missing or malformed hash verifies against DUMMY_HASH instead, so every call runs exactly one
 * argon2id verification with ARGON2_OPTIONS's parameters: the caller pays the same cost and gets false.
 * Like hashing, call it with no transaction open.
 */
export async function verifyPassword(
  verifier: PasswordVerifier,
  hash: string | null | undefined,
  plain: string,
): Promise<boolean> {
  if (!hash?.startsWith('$argon2')) {
    await verifier.verify(DUMMY_HASH, plain).catch(() => false);
    return false;
  }
  try {
    return await verifier.verify(hash, plain);
  } catch {
    return false;
  }
}
