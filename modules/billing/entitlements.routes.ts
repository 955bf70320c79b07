import { defineRoute } from '../../framework/entity/define.ts';
import { planLimitsOf } from '../../framework/entitlements/limits.ts';
import { EntitlementsAnswer } from '../../framework/entitlements/schemas.ts';
import { answer } from '../../framework/http/entity-route-parts.ts';
import { grants } from '../../framework/contracts/entitlements.ts';

/**
 * What the tenant's plan grants, for a client deciding what to offer (docs/billing.md,
 * "Entitlements"): every signed-in caller may ask, as every caller is held to it.
 */
export const entitlementsRoute = defineRoute({
  method: 'GET',
  url: '/api/v1/billing/entitlements',
  operationId: 'billing-entitlements-read',
  summary: "Read the tenant's features and limits",
  description:
    'The features the plan the tenant’s subscription serves grants (with no subscription, a cancelled one and at the operator tenant: billing.default_entitlements, by default every feature and no limit; the operator’s override of this tenant over either), and every declared limit with its value (null: no bound) and the tenant’s current use. Resolved in this request’s transaction, as every request’s are: a route gated by a feature the list lacks answers 403 FEATURE_NOT_IN_PLAN, a write past a limit 403 PLAN_LIMIT_REACHED.',
  tags: ['billing'],
  access: 'signedIn',
  schema: { response: { 200: answer(EntitlementsAnswer, "The tenant's entitlements and use") } },
  handler: async ({ tx }) => {
    const limits = planLimitsOf(tx);
    const { entitlements, limits: standing } = await limits.uses(tx);
    return {
      features: [...limits.features].filter((name) => grants(entitlements, name)).sort(),
      limits: standing,
    };
  },
});
