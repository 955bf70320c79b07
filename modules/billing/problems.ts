import { defineProblems, type ProblemCodesOf } from '../../framework/entity/define.ts';

/** The billing module's refusals (docs/billing.md). */
export const billingProblems = defineProblems({
  PLAN_IN_USE: {
    status: 409,
    title: 'Plan still subscribed',
    sentence: 'This plan is still in use by a subscription, so it cannot be deleted. Make it inactive instead.',
  },
  PERIOD_OWED: {
    status: 409,
    title: 'A period is owed for',
    sentence: 'A payment for the current period is still owed. Settle it first.',
  },
  PAYMENT_DECLINED: { status: 402, title: 'Payment declined', sentence: 'The payment was declined.' },
});

declare module '../../framework/contracts/problems.ts' {
  interface ProblemCodes extends ProblemCodesOf<typeof billingProblems> {}
}
