import type { JobContext, JobDefinition, TxContext } from '../../framework/entity/define.ts';
import { chargeKey, recordPending, recordReceipt, type OwedCharge } from './charges.ts';
import { graceOver, periodEnd } from './periods.ts';
import { renewalPlan } from './plans.ts';
import { paymentProvider } from './provider.ts';
import type { SubscriptionsTable } from './tables.ts';
import type { Selectable } from 'kysely';

type Row = Selectable<SubscriptionsTable>;

/** What one tenant's renewal did: printed by `npm run job` and logged. */
export type RenewalAction = 'none' | 'ended' | 'cancelled' | 'renewed' | 'past_due' | 'failed_again';

/** The tenant's live subscription whose period is over, locked; none when nothing is due. */
async function due(tx: TxContext): Promise<Row | undefined> {
  return tx.db
    .selectFrom('subscriptions')
    .selectAll()
    .where('deleted_at', 'is', null)
    .where('ended_at', 'is', null)
    .where('period_end', '<=', tx.now)
    .forUpdate()
    .executeTakeFirst();
}

type Step1 =
  | { done: RenewalAction }
  | { charge: OwedCharge; subscriptionId: string; attemptCount: number; periodEnd: Date };

/** The next period and its price, stamped from the plan (the pending plan, if one was chosen). */
async function nextPeriod(tx: TxContext, row: Row) {
  const plan = await renewalPlan(tx, row.pending_plan_id ?? row.plan_id);
  const start = row.period_end;
  return { plan, start, end: periodEnd(start, plan.interval, row.anchor_day) };
}

/** Starts the next period: status active, price stamped, dunning cleared, the pending plan applied. */
async function renew(tx: TxContext, row: Row, period: Awaited<ReturnType<typeof nextPeriod>>): Promise<RenewalAction> {
  await tx.db
    .updateTable('subscriptions')
    .set({
      plan_id: period.plan.id,
      pending_plan_id: null,
      status: 'active',
      period_start: period.start,
      period_end: period.end,
      price: period.plan.price,
      currency: period.plan.currency,
      attempt_count: 0,
      past_due_since: null,
      updated_at: tx.now,
    })
    .where('id', '=', row.id)
    .execute();
  tx.publish('billing.renewed', {
    planId: period.plan.id,
    periodStart: period.start.toISOString(),
    periodEnd: period.end.toISOString(),
    price: period.plan.price,
    currency: period.plan.currency,
  });
  return 'renewed';
}

/**
 * Cancels and ends the subscription whose period is over. Dunning publishes billing.cancelled
 * (reason dunning); a cancel at period end published its event when the customer asked.
 */
async function cancelAndEnd(tx: TxContext, row: Row, reason: 'customer' | 'dunning'): Promise<RenewalAction> {
  await tx.db
    .updateTable('subscriptions')
    .set({ status: 'cancelled', ended_at: tx.now, updated_at: tx.now })
    .where('id', '=', row.id)
    .execute();
  if (reason === 'dunning') tx.publish('billing.cancelled', { reason });
  return 'cancelled';
}

/**
 * Transaction 1: what is owed. Rows of the SPEC table that need no money are settled here (a
 * cancelled subscription's period is over: it ends; cancel at period end; dunning past the grace;
 * a free plan renews); otherwise a pending charge is recorded under a deterministic key.
 */
async function workOut(tx: TxContext): Promise<Step1> {
  const row = await due(tx);
  if (!row) return { done: 'none' };
  if (row.status === 'cancelled') {
    await tx.db
      .updateTable('subscriptions')
      .set({ ended_at: tx.now, updated_at: tx.now })
      .where('id', '=', row.id)
      .execute();
    return { done: 'ended' };
  }
  if (row.cancel_at_period_end) return { done: await cancelAndEnd(tx, row, 'customer') };
  if (row.status === 'past_due' && row.past_due_since && graceOver(row.past_due_since, tx.now))
    return { done: await cancelAndEnd(tx, row, 'dunning') };
  const period = await nextPeriod(tx, row);
  if (period.plan.price === 0) return { done: await renew(tx, row, period) };
  const attempt = row.attempt_count + 1;
  const charge: OwedCharge = {
    idempotencyKey: chargeKey(tx.tenant.id, period.start, attempt),
    planId: period.plan.id,
    amount: period.plan.price,
    currency: period.plan.currency,
    periodStart: period.start,
    attempt,
  };
  await recordPending(tx, charge);
  return { charge, subscriptionId: row.id, attemptCount: row.attempt_count, periodEnd: row.period_end };
}

/**
 * Transaction 2: the receipt, and the state it moves to. A settled charge renews; a failure counts
 * the attempt and, the first time, moves to past_due (billing.past_due once, not on later nights).
 * The period does not advance while unpaid. A subscription that changed since transaction 1
 * (cancelled meanwhile) keeps the receipt and is left as it is.
 *
 * The subscription is locked before the charge's row is written, in the order transaction 1 takes
 * them: two runs of one tenant at once (two runs of a slot, an operator's `npm run job` beside the
 * worker) otherwise deadlocked, one holding the charge's row and waiting for the subscription, the
 * other holding the subscription and inserting the same charge key.
 */
async function recordOutcome(
  tx: TxContext,
  owed: Extract<Step1, { charge: OwedCharge }>,
  outcome: 'settled' | 'declined' | 'error',
): Promise<RenewalAction> {
  const row = await due(tx);
  await recordReceipt(tx, owed.charge.idempotencyKey, outcome);
  if (
    !row ||
    row.id !== owed.subscriptionId ||
    row.attempt_count !== owed.attemptCount ||
    row.period_end.getTime() !== owed.periodEnd.getTime() ||
    row.status === 'cancelled'
  ) {
    return 'none';
  }
  if (outcome === 'settled') {
    const plan = await renewalPlan(tx, owed.charge.planId);
    // The price billed is the one charged, even if the plan's changed since transaction 1.
    const stamped = { ...plan, price: owed.charge.amount, currency: owed.charge.currency };
    return renew(tx, row, {
      plan: stamped,
      start: row.period_end,
      end: periodEnd(row.period_end, plan.interval, row.anchor_day),
    });
  }
  const first = row.status !== 'past_due';
  await tx.db
    .updateTable('subscriptions')
    .set({
      status: 'past_due',
      attempt_count: row.attempt_count + 1,
      past_due_since: first ? tx.now : row.past_due_since,
      updated_at: tx.now,
    })
    .where('id', '=', row.id)
    .execute();
  if (!first) return 'failed_again';
  tx.publish('billing.past_due', { attemptCount: row.attempt_count + 1, periodStart: row.period_end.toISOString() });
  return 'past_due';
}

/** One tenant's renewal: transaction, the provider with no transaction open, transaction. */
export async function renewTenant(ctx: JobContext): Promise<{ action: RenewalAction; outcome?: string }> {
  const owed = await ctx.transaction(workOut);
  if ('done' in owed) return { action: owed.done };
  const tenant = ctx.tenant!;
  const result = await paymentProvider(ctx.services).charge({
    amount: owed.charge.amount,
    currency: owed.charge.currency,
    tenantId: tenant.id,
    idempotencyKey: owed.charge.idempotencyKey,
  });
  const action = await ctx.transaction((tx) => recordOutcome(tx, owed, result.outcome));
  return { action, outcome: result.outcome };
}

/** billing-renew: every day at 02:15, per tenant, for the subscription whose period is over. */
export const renewJob: JobDefinition = {
  name: 'billing-renew',
  cron: '15 2 * * *',
  perTenant: true,
  publishes: ['billing.renewed', 'billing.past_due', 'billing.cancelled'],
  run: renewTenant,
};
