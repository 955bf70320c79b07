import type { Generated } from 'kysely';

export type PlanInterval = 'month' | 'year';
export type SubscriptionStatus = 'trial' | 'active' | 'past_due' | 'cancelled';
export type ChargeOutcome = 'settled' | 'declined' | 'error';

/** The billing module's tables (migrations/billing), for typed queries outside the generic operations. */
export interface PlansTable {
  id: Generated<string>;
  code: string;
  name: string;
  price: number;
  currency: string;
  interval: PlanInterval;
  features: Generated<string[]>;
  active: boolean;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  deleted_at: Date | null;
}

export interface SubscriptionsTable {
  id: Generated<string>;
  tenant_id: Generated<string>;
  plan_id: string;
  pending_plan_id: string | null;
  status: SubscriptionStatus;
  period_start: Date;
  period_end: Date;
  cancel_at_period_end: Generated<boolean>;
  price: number;
  currency: string;
  trial_used_at: Date | null;
  attempt_count: Generated<number>;
  past_due_since: Date | null;
  anchor_day: number;
  ended_at: Date | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  deleted_at: Date | null;
}

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

declare module '../../framework/db/types.ts' {
  interface Database {
    plans: PlansTable;
    subscriptions: SubscriptionsTable;
    billing_charges: BillingChargesTable;
    billing_sandbox_charges: BillingSandboxChargesTable;
  }
}
