-- The price list (billing.plan): global, every tenant reads it, the operator writes it.
create table plans (
  id uuid primary key default gen_random_uuid(),
  code text not null,
  name text not null,
  price integer not null check (price >= 0),
  currency text not null,
  interval text not null check (interval in ('month', 'year')),
  features text[] not null default '{}',
  active boolean not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create unique index plans_code_unique on plans (code) where deleted_at is null;
-- One index per sort of the list (global: over the whole table, live rows only).
create index plans_list on plans (created_at, id) where deleted_at is null;
create index plans_by_updated on plans (updated_at, id) where deleted_at is null;
create index plans_by_code on plans (code, id) where deleted_at is null;
create index plans_by_name on plans (name, id) where deleted_at is null;
create index plans_by_price on plans (price, id) where deleted_at is null;

-- One subscription per tenant (billing.subscription, a singleton). Every column is written by the
-- subscribe and cancel commands or the renewal job, never by a customer's body.
create table subscriptions (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null default app_tenant_id() references tenants (id),
  plan_id uuid not null references plans (id),
  pending_plan_id uuid references plans (id),
  status text not null check (status in ('trial', 'active', 'past_due', 'cancelled')),
  period_start timestamptz not null,
  period_end timestamptz not null,
  cancel_at_period_end boolean not null default false,
  price integer not null,
  currency text not null,
  trial_used_at timestamptz,
  attempt_count integer not null default 0,
  past_due_since timestamptz,
  anchor_day integer not null check (anchor_day between 1 and 31),
  ended_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create unique index subscriptions_one_per_tenant on subscriptions (tenant_id) where deleted_at is null;
-- The renewal job's question: the tenant's subscription whose period is over.
create index subscriptions_due on subscriptions (tenant_id, period_end) where deleted_at is null and ended_at is null;
call make_tenant_table('subscriptions');

-- The tenant's ledger of charges: one row per idempotency key, written pending before the
-- provider is called (no transaction open then) and given its outcome after.
create table billing_charges (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null default app_tenant_id() references tenants (id),
  idempotency_key text not null,
  plan_id uuid not null references plans (id),
  amount integer not null check (amount >= 0),
  currency text not null,
  period_start timestamptz not null,
  attempt integer not null,
  outcome text check (outcome in ('settled', 'declined', 'error')),
  created_at timestamptz not null default now(),
  recorded_at timestamptz
);
create unique index billing_charges_key on billing_charges (tenant_id, idempotency_key);
call make_tenant_table('billing_charges');

-- The sandbox payment provider's own store, standing where a real provider's servers would: it
-- remembers every idempotency key across restarts. Not tenant data: the provider is outside.
create table billing_sandbox_charges (
  idempotency_key text primary key,
  tenant_id uuid not null,
  amount integer not null,
  currency text not null,
  outcome text not null check (outcome in ('settled', 'declined', 'error')),
  created_at timestamptz not null default now()
);
-- No tenant transaction reads or writes it: only the provider does, through the pool.
revoke all on billing_sandbox_charges from tenantry_app;

-- Is a plan still subscribed (or chosen for the next period) in any tenant? The plan's DELETE runs
-- at the operator tenant, which sees only its own subscriptions: a security-definer answer.
create function billing_plan_in_use(plan uuid) returns boolean
  language sql stable
  as $$ select exists (
    select 1 from subscriptions
     where (plan_id = plan or pending_plan_id = plan) and deleted_at is null and ended_at is null
  ) $$;
call allow_cross_tenant_read('subscriptions');
call make_cross_tenant_function('billing_plan_in_use(uuid)');
