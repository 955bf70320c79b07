import { defineProblems, type ProblemCodesOf } from '../../framework/entity/define.ts';

/** The auth module's refusals: sign-in, personal access tokens, roles' permissions, single sign-on (docs/auth.md). */
export const authProblems = defineProblems({
  ErrCredentials: {
    status: 401,
    title: 'Invalid credentials',
    sentence: 'The address or the password is wrong.',
  },
  TOKEN_EXPIRY_TOO_LONG: { status: 422, title: 'Access token expiry beyond the longest allowed' },
  TOKEN_PERMISSION_NOT_HELD: { status: 403, title: 'Access token permission the caller does not hold' },
  PERMISSION_UNKNOWN: {
    status: 422,
    title: 'Unknown permission',
    sentence: 'One of the permissions does not exist.',
    detail: true,
  },
  PERMISSION_OPERATOR_ONLY: {
    status: 422,
    title: 'Operator permission in a customer role',
    sentence: 'Only the operator’s own roles may hold operator permissions.',
    detail: true,
  },
  OIDC_STATE_INVALID: {
    status: 400,
    title: 'Single sign-on state missing, tampered or expired',
    sentence: 'The single sign-on took too long or was interrupted. Start it again.',
  },
  OIDC_REFUSED: {
    status: 401,
    title: 'Single sign-on refused',
    sentence: 'The identity provider did not sign you in.',
  },
  OIDC_ISSUER_UNAVAILABLE: {
    status: 502,
    title: 'Identity provider unavailable',
    sentence: 'The identity provider cannot be reached. Try again later.',
  },
});

declare module '../../framework/contracts/problems.ts' {
  interface ProblemCodes extends ProblemCodesOf<typeof authProblems> {}
}
