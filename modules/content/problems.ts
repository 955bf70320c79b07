import { defineProblems, type ProblemCodesOf } from '../../framework/entity/define.ts';

/** The content module's refusals: a slug outside the grammar, a slug taken (docs/content.md). */
export const contentProblems = defineProblems({
  SLUG_INVALID: {
    status: 422,
    title: 'Slug outside the slug grammar',
    sentence: 'Use lowercase letters, digits and single hyphens, like about-us.',
  },
  SLUG_TAKEN: {
    status: 409,
    title: 'Slug already used',
    sentence: 'Another item already uses this address. Choose another one.',
  },
});

declare module '../../framework/contracts/problems.ts' {
  interface ProblemCodes extends ProblemCodesOf<typeof contentProblems> {}
}
