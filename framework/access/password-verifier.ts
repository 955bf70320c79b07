import argon2 from 'argon2';
import type { PasswordVerifier } from '../contracts/access.ts';

export type { PasswordVerifier } from '../contracts/access.ts';

/** argon2's own verification: the app's PasswordVerifier unless buildApp is handed another. */
export const argon2Verifier: PasswordVerifier = {
  verify: (hash, plain) => argon2.verify(hash, plain),
};
