import Type from 'typebox';
import {
  apiRoute,
  registerAdminEffectPage,
  registerAdminPage,
  renderTemplate,
  runApiRoute,
  type AdminPageContext,
  type AdminSite,
  FORM_TOKEN_FIELD,
  problemText,
} from '../../framework/admin/index.ts';
import { formatMoney, when } from '../../framework/format.ts';
import type { NoTxRouteDefinition, RouteDefinition } from '../../framework/entity/define.ts';
import { toProblem } from '../../framework/http/problems.ts';
import type { ProblemError } from '../../framework/errors.ts';
import { StringEnum } from '../../framework/entity/string-enum.ts';
import { usageBars } from './usage-bars.ts';

export const SUBSCRIPTION_PAGE = '/admin/billing/subscription';

/** What the page says after a change went through (the query's `done`). */
const DONE = {
  subscribed: 'Your plan is chosen.',
  cancelled: 'Your subscription is cancelled.',
} as const;
const PageQuery = Type.Object({ done: Type.Optional(StringEnum(Object.keys(DONE))) });

const STATUS_TEXT: Record<string, string> = {
  trial: 'Trial',
  active: 'Active',
  past_due: 'Payment overdue',
  cancelled: 'Cancelled',
};

interface PlanRow {
  id: string;
  name: string;
  price: number;
  currency: string;
  interval: 'month' | 'year';
  active: boolean;
  features: string[];
}
interface SubscriptionRow {
  planId: string;
  pendingPlanId?: string | null;
  status: string;
  periodEnd: Date | string;
  cancelAtPeriodEnd: boolean;
  price: number;
  currency: string;
  trialUsedAt?: Date | string | null;
  endedAt?: Date | string | null;
}

const route = (site: AdminSite, operationId: string) => {
  const found = apiRoute(site.services, operationId);
  if (!found) throw new Error(`the billing pages need the API route ${operationId}`);
  return found;
};

/**
 * The tenant's subscription for its administrators, at /admin/billing/subscription: guarded like
 * GET /api/v1/billing/subscription (billing:read) and read through it; the plan, its status, the
 * trial, the end of the period and a cancellation at the period end; then the active plans, each
 * with a button that runs POST .../subscribe (billing:manage) for a first subscribe or a change of
 * plan, and the two cancels (.../cancel, billing:manage). Subscribe charges a first paid period
 * before its transaction opens (a command with `prepare`), so its page is an effect page that runs
 * the API route as the API does. Refusals come back as this page with a sentence.
 */
export function registerBillingPages(site: AdminSite): void {
  const read = route(site, 'billing-subscription-read') as RouteDefinition;
  const plans = route(site, 'billing-plan-list') as RouteDefinition;
  const subscribe = route(site, 'billing-subscription-subscribe') as NoTxRouteDefinition;
  const cancel = route(site, 'billing-subscription-cancel') as RouteDefinition;

  registerAdminPage(site, {
    path: SUBSCRIPTION_PAGE,
    access: read.access,
    summary: 'Subscription',
    schema: { querystring: PageQuery },
    handler: (page) => renderPage(page, { done: page.query.done as keyof typeof DONE | undefined }),
  });

  registerAdminEffectPage(site, {
    path: `${SUBSCRIPTION_PAGE}/subscribe`,
    route: subscribe,
    summary: 'Subscribe or change plan',
    input: (posted) => ({ body: { planId: typeof posted.planId === 'string' ? posted.planId : '' } }),
    next: () => `${SUBSCRIPTION_PAGE}?done=subscribed`,
    onError: (page, refused) => renderPage(page, { refused }),
  });

  registerAdminPage(site, {
    method: 'POST',
    path: `${SUBSCRIPTION_PAGE}/cancel`,
    access: cancel.access,
    summary: 'Cancel the subscription',
    ...(cancel.publishes ? { publishes: cancel.publishes } : {}),
    handler: async (page) => {
      await runApiRoute(cancel, page, { body: { atPeriodEnd: page.body.when !== 'now' } });
      return page.redirect(`${SUBSCRIPTION_PAGE}?done=cancelled`);
    },
    onError: (page, refused) => renderPage(page, { refused }),
  });

  async function readSubscription(page: AdminPageContext): Promise<SubscriptionRow | null> {
    try {
      return (await runApiRoute(read, page)) as SubscriptionRow;
    } catch (err) {
      // 404 until the first subscribe: the page then offers the plans.
      if (toProblem(err).status === 404) return null;
      throw err;
    }
  }

  async function renderPage(
    page: AdminPageContext,
    options: { done?: keyof typeof DONE | undefined; refused?: ProblemError },
  ): Promise<string> {
    const subscription = await readSubscription(page);
    const listed = (await runApiRoute(plans, page, { query: { limit: 100, offset: 0, sort: 'price' } })) as {
      items: PlanRow[];
    };
    const byId = new Map(listed.items.map((plan) => [plan.id, plan]));
    const live = subscription && !subscription.endedAt ? subscription : null;
    const planLabel = (id: string | null | undefined) =>
      id ? (byId.get(id)?.name ?? 'A plan no longer offered') : null;
    const price = (plan: PlanRow) => `${formatMoney(plan.price, plan.currency)} a ${plan.interval}`;
    const manage = page.can(cancel.access);
    const refused = options.refused ? problemText(options.refused) : null;
    const body = renderTemplate('./admin/pages/billing', {
      subscription: live
        ? {
            plan: planLabel(live.planId),
            pendingPlan: planLabel(live.pendingPlanId),
            status: STATUS_TEXT[live.status] ?? live.status,
            statusValue: live.status,
            price: formatMoney(live.price, live.currency),
            trial: live.status === 'trial',
            periodEnd: when(live.periodEnd),
            cancelAtPeriodEnd: live.cancelAtPeriodEnd,
            cancelled: live.status === 'cancelled',
            pastDue: live.status === 'past_due',
          }
        : null,
      trialUsed: Boolean(subscription?.trialUsedAt),
      plans: listed.items
        .filter((plan) => plan.active)
        .map((plan) => ({
          id: plan.id,
          name: plan.name,
          price: price(plan),
          // What a feature gives, in words (its declared description), never its name.
          features: plan.features.map((name) => site.services.registry.features.get(name)?.description ?? name),
          current: live?.planId === plan.id,
          pending: live?.pendingPlanId === plan.id,
        })),
      manage,
      // A cancelled subscription runs to its period's end; a new plan is chosen after it ended.
      canChoose: manage && (!live || (live.status !== 'cancelled' && live.status !== 'past_due')),
      done: options.done ? DONE[options.done] : null,
      refused: refused
        ? { title: refused.sentence, items: refused.detail ? [refused.detail] : [], code: options.refused!.code }
        : null,
      csrf: page.csrf(),
      csrfField: FORM_TOKEN_FIELD,
      base: SUBSCRIPTION_PAGE,
      usage: await usageBars(page.tx),
    });
    return page.render({ title: 'Subscription', body, ...(options.refused ? { status: options.refused.status } : {}) });
  }
}
