import { defineProblems, type ProblemCodesOf } from '../../framework/entity/define.ts';

/**
 * The webhook module's refusals: a create past the installation's bound on a tenant's live
 * endpoints, webhooks.max_endpoints_per_tenant (endpoint.entity.ts; docs/webhooks.md).
 */
export const webhookProblems = defineProblems({
  LIMIT_REACHED: {
    status: 409,
    title: 'Limit reached',
    sentence: 'There are as many of these as this tenant may have. Delete one first.',
  },
});

declare module '../../framework/contracts/problems.ts' {
  interface ProblemCodes extends ProblemCodesOf<typeof webhookProblems> {}
}
