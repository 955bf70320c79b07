import type { Generated } from 'kysely';
import type { Static } from 'typebox';
import type { EntityTable } from '../../framework/db/entity-table.ts';
import type { plan } from './plan.entity.ts';
import type { SubscriptionFields } from './subscription.fields.ts';

type PlanFields = (typeof plan)['fields'];

export type PlanInterval = Static<PlanFields['interval']>;
export type SubscriptionStatus = Static<SubscriptionFields['status']>;
export type ChargeOutcome = 'settled' | 'declined' | 'error';

/**
 * The billing module's tables (migrations/billing), for typed queries outside the generic
 * operations. The entities' tables are derived from their fields; the ledger and the sandbox
 * provider's store are no entities (no definition to derive from), so they are written out.
 */
export type PlansTable = EntityTable<PlanFields, { scope: 'global' }>;

export type SubscriptionsTable = EntityTable<SubscriptionFields>;

export interface BillingChargesTable {
  id: Generated<string>;
  tenant_id: Generated<string>;
  idempotency_key: string;
  plan_id: string;
  amount: number;
  currency: string;
  period_start: Date;
  attempt: number;
  outcome: ChargeOutcome | null;
  created_at: Generated<Date>;
  recorded_at: Date | null;
}

export interface BillingSandboxChargesTable {
  idempotency_key: string;
  tenant_id: string;
  amount: number;
  currency: string;
  outcome: ChargeOutcome;
  created_at: Generated<Date>;
}

declare module '../../framework/contracts/database.ts' {
  interface Database {
    plans: PlansTable;
    subscriptions: SubscriptionsTable;
    billing_charges: BillingChargesTable;
    billing_sandbox_charges: BillingSandboxChargesTable;
  }
}
