import type { TxContext } from '../../framework/entity/define.ts';
import type { ChargeOutcome } from './tables.ts';
import './unique-keys.ts';

/** A charge worked out in one transaction and sent to the provider after it committed. */
export interface OwedCharge {
  idempotencyKey: string;
  planId: string;
  amount: number;
  currency: string;
  periodStart: Date;
  attempt: number;
}

/**
 * The charge's idempotency key: tenant, the start of the period it pays for, and the attempt
 * number. A run that dies after the charge computes the same key again, so the provider replays
 * the first outcome; each night's retry of a failed charge is a new attempt with a new key.
 */
export const chargeKey = (tenantId: string, periodStart: Date, attempt: number): string =>
  `${tenantId}:${periodStart.toISOString()}:${attempt}`;

/**
 * The key of a first subscribe's charge: tenant, "first" and the period start. Distinct from the
 * renewal's keys, so a first charge still in flight can be found (pendingFirstCharge).
 */
export const firstChargeKey = (tenantId: string, periodStart: Date): string =>
  `${tenantId}:first:${periodStart.toISOString()}`;

/** How long a first charge with no receipt yet counts as in flight (the provider is being called). */
const FIRST_CHARGE_IN_FLIGHT_MS = 10 * 60 * 1000;

/**
 * Makes the tenant's first-subscribe charges take turns until the transaction ends: two
 * subscribes at once work out what they owe one after the other, so the second finds the first's
 * pending charge (pendingFirstCharge) instead of recording a second one.
 */
export async function lockFirstCharge(tx: TxContext): Promise<void> {
  await tx.db
    .selectNoFrom((eb) =>
      eb
        .fn('pg_advisory_xact_lock', [
          eb.fn('hashtextextended', [eb.val(`billing-first-charge:${tx.tenant.id}`), eb.lit(0)]),
        ])
        .as('locked'),
    )
    .execute();
}

/**
 * A first subscribe's charge for this plan that another request recorded within the last minutes
 * and whose receipt is not in yet: a concurrent subscribe pays with the same idempotency key (when
 * price and currency still match), so the provider replays that charge instead of taking the
 * money twice.
 */
export async function pendingFirstCharge(tx: TxContext, planId: string): Promise<OwedCharge | undefined> {
  const row = await tx.db
    .selectFrom('billing_charges')
    .select(['idempotency_key', 'plan_id', 'amount', 'currency', 'period_start', 'attempt'])
    .where('idempotency_key', 'like', `${tx.tenant.id}:first:%`)
    .where('outcome', 'is', null)
    .where('plan_id', '=', planId)
    .where('period_start', '>=', new Date(tx.now.getTime() - FIRST_CHARGE_IN_FLIGHT_MS))
    .orderBy('period_start', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    idempotencyKey: row.idempotency_key,
    planId: row.plan_id,
    amount: row.amount,
    currency: row.currency,
    periodStart: row.period_start,
    attempt: row.attempt,
  };
}

/** Records the pending charge (once per key: a rerun after a crash finds it there). */
export async function recordPending(tx: TxContext, charge: OwedCharge): Promise<void> {
  await tx.db
    .insertInto('billing_charges')
    .values({
      idempotency_key: charge.idempotencyKey,
      plan_id: charge.planId,
      amount: charge.amount,
      currency: charge.currency,
      period_start: charge.periodStart,
      attempt: charge.attempt,
    })
    .onConflict((oc) => oc.columns(['tenant_id', 'idempotency_key']).doNothing())
    .execute();
}

/** Records what the provider answered for the charge. */
export async function recordReceipt(tx: TxContext, idempotencyKey: string, outcome: ChargeOutcome): Promise<void> {
  await tx.db
    .updateTable('billing_charges')
    .set({ outcome, recorded_at: tx.now })
    .where('idempotency_key', '=', idempotencyKey)
    .execute();
}
