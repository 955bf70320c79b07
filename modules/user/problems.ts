import { defineProblems, type ProblemCodesOf } from '../../framework/entity/define.ts';

/**
 * The user module's refusals: the last administrator (administrators.ts), a role that does not
 * exist, one's own password set where it must be changed (user.commands.ts, set-password).
 */
export const userProblems = defineProblems({
  LAST_ADMINISTRATOR: {
    status: 409,
    title: 'Last administrator',
    sentence: 'This is the last administrator of the tenant. Give someone else the admin role first.',
  },
  ROLE_UNKNOWN: {
    status: 422,
    title: 'Unknown role',
    sentence: 'One of the roles does not exist. Create it on the Roles page first.',
    detail: true,
  },
  USE_PASSWORD_CHANGE: {
    status: 403,
    title: 'Own password: change it with the current one',
    sentence:
      'You cannot set your own password here. Your own password is changed by giving the current one, or ask another administrator to set it.',
  },
});

declare module '../../framework/contracts/problems.ts' {
  interface ProblemCodes extends ProblemCodesOf<typeof userProblems> {}
}
