import { defineModule, entity } from '../../framework/entity/define.ts';
import { plan } from './plan.entity.ts';
import { subscription } from './subscription.entity.ts';
import { renewJob } from './renewal.ts';
import './tables.ts';
import { registerBillingPages, SUBSCRIPTION_PAGE } from './billing.admin.ts';
import { billingProblems } from './problems.ts';
import { entitlementsRoute } from './entitlements.routes.ts';

/**
 * The plan a tenant's subscription serves now, for the framework's entitlements (docs/billing.md):
 * a subscription counts while it is not cancelled and has not ended (one set to cancel at the
 * period's end still serves its period); the plan is the one it serves, not the one chosen for the
 * next period (pending_plan_id). Row-level security scopes the subscription to the transaction's
 * tenant as well; plans are global.
 */
const servedPlanSql = (tenant: string) => `(select json_build_object('features', p.features, 'limits', p.limits)
                            from subscriptions s join plans p on p.id = s.plan_id
                           where s.tenant_id = ${tenant} and s.deleted_at is null and s.ended_at is null
                             and s.status <> 'cancelled')`;

/**
 * Billing: the operator's price list (plans, global), one subscription per tenant (a singleton
 * written by subscribe and cancel), the nightly renewal with dunning, and the payment provider
 * (docs/billing.md).
 */
export const billingModule = defineModule({
  name: 'billing',
  description: 'The price list, one subscription per tenant, renewal and dunning',
  problems: billingProblems,
  permissions: [
    { name: 'billing:read', description: "Read the price list and the tenant's subscription" },
    { name: 'billing:manage', description: "Subscribe, change plan and cancel the tenant's subscription" },
    { name: 'billing:catalog', description: 'Plan writes (the operator-owned price list)', operator: true },
  ],
  events: ['billing.subscribed', 'billing.cancelled', 'billing.renewed', 'billing.past_due'],
  entities: [entity(plan), entity(subscription)],
  routes: [entitlementsRoute],
  planEntitlementsSql: servedPlanSql,
  // The live plans' names, checked at boot against the declared features and limits.
  storedEntitlementsSql: `select 'plan ' || code as holder, features, limits from plans where deleted_at is null order by code`,
  jobs: [renewJob],
  admin: {
    label: 'Billing',
    sidebar: [
      { label: 'Plans', path: '/admin/billing/plans', order: 50 },
      { label: 'Subscription', path: SUBSCRIPTION_PAGE, order: 51 },
    ],
    plansPage: SUBSCRIPTION_PAGE,
    // The subscription has no generated pages (a singleton): a hand-written one (billing.admin.ts).
    pages: [registerBillingPages],
  },
});
