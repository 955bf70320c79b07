import Type from 'typebox';
import {
  defineCommand,
  defineEntity,
  type CommandPrepareContext,
  type EntityRow,
} from '../../framework/entity/define.ts';
import type { TxContext } from '../../framework/entity/define.ts';
import { problem } from '../../framework/errors.ts';
import { subscriptionFields, type SubscriptionFields, subscriptionFieldText } from './subscription.fields.ts';
import { livePlan } from './plans.ts';
import { addDays, periodEnd } from './periods.ts';
import {
  firstChargeKey,
  lockFirstCharge,
  pendingFirstCharge,
  recordPending,
  recordReceipt,
  type OwedCharge,
} from './charges.ts';
import { paymentProvider } from './provider.ts';

type Subscription = EntityRow<SubscriptionFields>;
const command = defineCommand(subscriptionFields, { singleton: true });

const SubscribeBody = Type.Object({ planId: Type.String({ format: 'uuid' }) }, { additionalProperties: false });
const CancelBody = Type.Object(
  {
    atPeriodEnd: Type.Boolean({
      description: 'true: cancelled when the period ends; false: cancelled now (409 PERIOD_OWED while past due).',
    }),
  },
  { additionalProperties: false },
);

/** No live subscription: none yet, or the last one ended. A subscribe then starts a new one. */
const startsAfresh = (row: Subscription | null): boolean => row === null || row.endedAt !== null;

/** A paid first period is charged before the subscription exists, unless the tenant's one trial covers it. */
const trialAvailable = (row: Subscription | null, trialDays: number): boolean =>
  trialDays > 0 && (row?.trialUsedAt ?? null) === null;

/** The charge for a first paid period, settled before the command's transaction stores the subscription. */
interface SettledFirstCharge extends OwedCharge {
  settled: true;
}

async function currentRow(tx: TxContext): Promise<Subscription | null> {
  const row = await tx.db
    .selectFrom('subscriptions')
    .select(['trial_used_at', 'ended_at'])
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return row ? ({ trialUsedAt: row.trial_used_at, endedAt: row.ended_at } as Subscription) : null;
}

/**
 * A first subscribe to a paid plan with no trial left pays for its first period in the request,
 * through the renewal's three steps: a transaction records the pending charge, the provider is
 * called with no transaction open, and the command's transaction stores the subscription (and
 * the receipt). A decline records its receipt and answers 402 PAYMENT_DECLINED: no subscription.
 */
async function chargeFirstPeriod(
  ctx: CommandPrepareContext<'billing.subscribed'>,
  body: { planId: string },
): Promise<SettledFirstCharge | undefined> {
  const trialDays = ctx.services.config.billing.trial_days;
  const owed = await ctx.transaction(async (tx) => {
    await lockFirstCharge(tx);
    // A concurrent subscribe to the same plan may be paying already. Its charge is read before the
    // subscription: each statement sees what had committed when it began, and the subscription
    // and the charge's receipt commit together, so a receipt recorded after this read leaves its
    // subscription visible to the next one (read in the other order, both could be missed).
    const pending = await pendingFirstCharge(tx, body.planId);
    const row = await currentRow(tx);
    if (!startsAfresh(row)) return undefined;
    const plan = await livePlan(tx, body.planId, { mustBeActive: true });
    if (plan.price === 0 || trialAvailable(row, trialDays)) return undefined;
    // Pay with the concurrent subscribe's key: the provider replays it (charged once).
    if (pending && pending.amount === plan.price && pending.currency === plan.currency) return pending;
    const charge: OwedCharge = {
      idempotencyKey: firstChargeKey(tx.tenant.id, tx.now),
      planId: plan.id,
      amount: plan.price,
      currency: plan.currency,
      periodStart: tx.now,
      attempt: 1,
    };
    await recordPending(tx, charge);
    return charge;
  });
  if (!owed) return undefined;
  const result = await paymentProvider(ctx.services).charge({
    amount: owed.amount,
    currency: owed.currency,
    tenantId: ctx.tenant.id,
    idempotencyKey: owed.idempotencyKey,
  });
  if (result.outcome !== 'settled') {
    await ctx.transaction((tx) => recordReceipt(tx, owed.idempotencyKey, result.outcome));
    throw problem('PAYMENT_DECLINED', `the payment provider did not settle the first period (${result.outcome})`);
  }
  return { ...owed, settled: true };
}

const subscribe = command({
  summary: 'Subscribe to a plan, or change plan at the next renewal',
  admin: {
    label: 'Subscribe',
    intro: 'Choose a plan. A change of plan starts at the next renewal.',
    fields: {
      planId: {
        label: 'Plan',
        hint: 'One of the plans on offer.',
        messages: { format: 'Choose a plan.', required: 'Choose a plan.' },
      },
    },
  },
  description: [
    "First subscribe (or after the last subscription ended): a free plan is active at once; a paid plan starts the tenant's one trial (billing.trial_days, 0: none) and sets trialUsedAt;",
    'otherwise the first period is charged in the request, and a decline is 402 PAYMENT_DECLINED with nothing stored.',
    'Concurrent repeats answer as serial ones: the first creates the subscription, the others find it (200, nothing changed), and a paid first period is charged once (they share its idempotency key).',
    'The same plan again (or the plan already pending) changes nothing. Another plan becomes pendingPlanId and applies at the next renewal, refused with 409 PERIOD_OWED while past due.',
    'A cancelled subscription whose period is not over yet is 409 INVALID_STATE: subscribe again once it ended.',
    'An unknown or inactive plan is 422. Periods start at the time of the subscribe; anchorDay is its day of the month.',
  ].join(' '),
  body: SubscribeBody,
  references: { planId: 'billing.plan' },
  permission: 'billing:manage',
  problems: {
    402: 'The first period was not paid: declined or failed at the provider (PAYMENT_DECLINED); nothing stored',
    409: 'Another plan while a period is owed for (PERIOD_OWED); a cancelled subscription whose period is not over (INVALID_STATE)',
    422: 'Validation failed, or an unknown or inactive plan (VALIDATION_FAILED at /body/planId)',
  },
  publishes: ['billing.subscribed'],
  prepare: chargeFirstPeriod,
  async run(ctx, row, body, services, prepared) {
    if (row !== null && !startsAfresh(row)) {
      if (body.planId === row.planId || body.planId === row.pendingPlanId) return;
      if (row.status === 'past_due')
        throw problem('PERIOD_OWED', 'a period is owed for: the plan cannot change until it is paid');
      if (row.status === 'cancelled')
        throw problem(
          'INVALID_STATE',
          `the subscription is cancelled; subscribe again after ${row.periodEnd.toISOString()}`,
        );
      await livePlan(ctx, body.planId, { mustBeActive: true });
      ctx.publish('billing.subscribed', { planId: row.planId, pendingPlanId: body.planId, change: true });
      return { pendingPlanId: body.planId };
    }
    const plan = await livePlan(ctx, body.planId, { mustBeActive: true });
    const now = ctx.now;
    const anchorDay = now.getUTCDate();
    const fresh = {
      planId: plan.id,
      pendingPlanId: null,
      cancelAtPeriodEnd: false,
      attemptCount: 0,
      pastDueSince: null,
      endedAt: null,
      anchorDay,
      currency: plan.currency,
      price: plan.price,
    };
    ctx.publish('billing.subscribed', { planId: plan.id, change: false });
    if (plan.price === 0) {
      return {
        ...fresh,
        status: 'active',
        periodStart: now,
        periodEnd: periodEnd(now, plan.interval, anchorDay),
        trialUsedAt: row?.trialUsedAt ?? null,
      };
    }
    const trialDays = services.config.billing.trial_days;
    if (trialAvailable(row, trialDays)) {
      return { ...fresh, status: 'trial', periodStart: now, periodEnd: addDays(now, trialDays), trialUsedAt: now };
    }
    const charge = prepared as SettledFirstCharge | undefined;
    if (
      !charge?.settled ||
      charge.planId !== plan.id ||
      charge.amount !== plan.price ||
      charge.currency !== plan.currency
    ) {
      // The plan or the subscription changed between the charge and this transaction.
      throw problem('CONFLICT', 'the plan changed while its first period was being charged; try again');
    }
    await recordReceipt(ctx, charge.idempotencyKey, 'settled');
    const start = charge.periodStart;
    return {
      ...fresh,
      anchorDay: start.getUTCDate(),
      status: 'active',
      periodStart: start,
      periodEnd: periodEnd(start, plan.interval, start.getUTCDate()),
      trialUsedAt: row?.trialUsedAt ?? null,
    };
  },
});

const cancel = command({
  summary: 'Cancel the subscription, now or when the period ends',
  admin: {
    label: 'Cancel subscription',
    intro: 'Stops the subscription, now or when the paid period ends.',
    fields: {
      atPeriodEnd: {
        label: 'At the end of the period',
        hint: 'Ticked: it stops when the paid period ends. Not ticked: it stops now.',
      },
    },
  },
  description: [
    'atPeriodEnd true sets cancelAtPeriodEnd and publishes billing.cancelled (reason customer, atPeriodEnd true): the renewal cancels and ends the subscription when the period ends, charging nothing.',
    'atPeriodEnd false cancels now (billing.cancelled, reason customer), refused with 409 PERIOD_OWED while past due; the period already paid is not refunded and the subscription ends when it is over.',
    'Cancelling a cancelled subscription changes nothing.',
  ].join(' '),
  body: CancelBody,
  permission: 'billing:manage',
  problems: { 409: 'Cancel now while a period is owed for (PERIOD_OWED)' },
  publishes: ['billing.cancelled'],
  async run(ctx, row, body) {
    if (row === null || row.status === 'cancelled') return;
    if (body.atPeriodEnd) {
      if (row.cancelAtPeriodEnd) return;
      ctx.publish('billing.cancelled', { reason: 'customer', atPeriodEnd: true });
      return { cancelAtPeriodEnd: true };
    }
    if (row.status === 'past_due')
      throw problem('PERIOD_OWED', 'a period is owed for: pay it, or cancel at the period end');
    ctx.publish('billing.cancelled', { reason: 'customer', atPeriodEnd: false });
    return { status: 'cancelled', cancelAtPeriodEnd: false };
  },
});

/**
 * The tenant's one subscription at /api/v1/billing/subscription: GET (billing:read) is 404 until
 * the first subscribe; POST .../subscribe and .../cancel (billing:manage) are the only writes.
 * There is no PUT, PATCH or DELETE: a customer never writes its period or its price.
 */
export const subscription = defineEntity({
  module: 'billing',
  name: 'subscription',
  description: "The tenant's subscription: one per tenant, written only by subscribe, cancel and the renewal job.",
  singleton: true,
  fields: subscriptionFields,
  commandOwned: {
    planId: 'subscribe',
    pendingPlanId: 'subscribe',
    status: ['subscribe', 'cancel'],
    periodStart: 'subscribe',
    periodEnd: 'subscribe',
    cancelAtPeriodEnd: ['subscribe', 'cancel'],
    price: 'subscribe',
    currency: 'subscribe',
    trialUsedAt: 'subscribe',
    attemptCount: 'subscribe',
    pastDueSince: 'subscribe',
    anchorDay: 'subscribe',
    endedAt: 'subscribe',
  },
  permissions: { read: 'billing:read', write: 'billing:manage' },
  commands: { subscribe, cancel },
  admin: {
    title: 'status',
    columns: ['status', 'planId', 'periodEnd', 'price'],
    references: { planId: 'billing.plan', pendingPlanId: 'billing.plan' },
    fieldText: subscriptionFieldText,
  },
});
