import argon2 from 'argon2';
import type { PasswordHasher } from '../../framework/access/password-verifier.ts';

/**
 * Real argon2id at the lowest cost worth having, for tests that make many people (the security
 * suite's worlds): each hash takes about a millisecond instead of the production parameters' tens.
 * Its hashes are argon2id strings like production's, and the app's own verifier reads the cost from
 * each stored hash, so a right password still verifies and a wrong one is still refused. For test
 * apps only (startTestApp's passwordHasher): the product's hasher and ARGON2_OPTIONS are untouched.
 */
export const CHEAP_ARGON2_OPTIONS = { type: argon2.argon2id, memoryCost: 1024, timeCost: 1, parallelism: 1 } as const;

export const cheapPasswordHasher: PasswordHasher = {
  hash: (plain) => argon2.hash(plain, CHEAP_ARGON2_OPTIONS),
};
