import argon2 from 'argon2';

/**
 * The one primitive every password check goes through: whether `plain` matches an argon2 `hash`,
 * whose algorithm and parameters are read from the hash itself. It throws on a hash argon2 cannot
 * read. The app's is argon2's own (argon2Verifier); buildApp takes another through
 * AppOptions.passwordVerifier, the documented seam through which a test counts the verifications a
 * request runs (test/modules/auth/login.test.ts proves that every sign-in refusal runs exactly one).
 */
export interface PasswordVerifier {
  verify(hash: string, plain: string): Promise<boolean>;
}

export const argon2Verifier: PasswordVerifier = {
  verify: (hash, plain) => argon2.verify(hash, plain),
};
