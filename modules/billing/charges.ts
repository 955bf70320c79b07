import type { TxContext } from '../../framework/context/tx.ts';
import type { ChargeOutcome } from './tables.ts';

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
export const chargeKey = (tenantId: string, periodStart: Date, attempt: number): string => `${tenantId}:${periodStart.toISOString()}:${attempt}`;

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
  await tx.db.updateTable('billing_charges').set({ outcome, recorded_at: tx.now }).where('idempotency_key', '=', idempotencyKey).execute();
}
