import argon2 from 'argon2';
import type { PasswordHasher, PasswordVerifier } from '../contracts/access.ts';

export type { PasswordHasher, PasswordVerifier } from '../contracts/access.ts';

/**
 * argon2id at OWASP's minimum (19 MiB, two passes, one lane). Raising these later is safe:
 * verification reads the parameters from each stored hash.
 */
export const ARGON2_OPTIONS = { type: argon2.argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

/** argon2's own verification: the app's PasswordVerifier unless buildApp is handed another. */
export const argon2Verifier: PasswordVerifier = {
  verify: (hash, plain) => argon2.verify(hash, plain),
};

/** argon2id with ARGON2_OPTIONS: the app's PasswordHasher unless buildApp is handed another. */
export const argon2Hasher: PasswordHasher = {
  hash: (plain) => argon2.hash(plain, ARGON2_OPTIONS),
};
