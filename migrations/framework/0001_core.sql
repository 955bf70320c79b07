-- The restricted role every tenant transaction switches to: it owns nothing and cannot bypass
-- row-level security. Roles are cluster-wide, hence the existence check.
do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'tenantry_app') then
    create role tenantry_app nologin nobypassrls;
  end if;
end
$$;
grant tenantry_app to current_user;
grant usage on schema public to tenantry_app;
alter default privileges in schema public grant select, insert, update, delete on tables to tenantry_app;
alter default privileges in schema public grant usage, select on sequences to tenantry_app;
alter default privileges in schema public grant execute on functions to tenantry_app;

-- The tenant of the current transaction, or null outside one.
create function app_tenant_id() returns uuid
  language sql stable parallel safe
  as $$ select nullif(current_setting('app.tenant_id', true), '')::uuid $$;

-- Makes a table tenant-owned: row-level security forced on, one policy comparing tenant_id with
-- the transaction's tenant for reads and writes. Module migrations call it for each table.
create procedure make_tenant_table(tbl regclass)
  language plpgsql
  as $$
begin
  execute format('alter table %s enable row level security', tbl);
  execute format('alter table %s force row level security', tbl);
  execute format(
    'create policy tenant_isolation on %s using (tenant_id = app_tenant_id()) with check (tenant_id = app_tenant_id())',
    tbl);
end
$$;

-- Global: tenants and their hosts are read before any tenant is known.
create table tenants (
  id uuid primary key default gen_random_uuid(),
  slug text not null unique check (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
  name text not null check (length(name) between 1 and 200),
  status text not null default 'active' check (status in ('active', 'suspended')),
  is_operator boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index tenants_single_operator on tenants (is_operator) where is_operator;

create table tenant_hosts (
  host text primary key check (host = lower(host) and host !~ '[:/\s]'),
  tenant_id uuid not null references tenants (id),
  is_primary boolean not null default false,
  created_at timestamptz not null default now()
);
create index tenant_hosts_by_tenant on tenant_hosts (tenant_id);
create unique index tenant_hosts_one_primary on tenant_hosts (tenant_id) where is_primary;

-- Global, written by tenant transactions, read by the relay (as the owner). RLS without FORCE:
-- the restricted role sees only its own tenant's rows, the owner sees all.
create table outbox (
  id bigint generated always as identity primary key,
  event_id uuid not null default gen_random_uuid() unique,
  tenant_id uuid not null default app_tenant_id(),
  name text not null,
  payload jsonb not null default '{}',
  actor_id uuid,
  occurred_at timestamptz not null default now(),
  relayed_at timestamptz
);
create index outbox_pending on outbox (id) where relayed_at is null;
create index outbox_relayed on outbox (relayed_at) where relayed_at is not null;
alter table outbox enable row level security;
create policy tenant_isolation on outbox using (tenant_id = app_tenant_id()) with check (tenant_id = app_tenant_id());

-- Wakes the relay when a transaction that wrote events commits (NOTIFY is delivered on commit).
create function outbox_notify() returns trigger
  language plpgsql
  as $$ begin perform pg_notify('tenantry_outbox', ''); return null; end $$;
create trigger outbox_notify after insert on outbox for each statement execute function outbox_notify();

create table audit_events (
  tenant_id uuid not null default app_tenant_id(),
  event_id uuid not null,
  name text not null,
  actor_id uuid,
  occurred_at timestamptz not null,
  payload jsonb not null,
  recorded_at timestamptz not null default now(),
  primary key (tenant_id, event_id)
);
create index audit_events_by_time on audit_events (tenant_id, occurred_at desc);
call make_tenant_table('audit_events');

-- Idempotency of subscriptions: the event id is recorded in the same transaction as the effect.
create table processed_events (
  tenant_id uuid not null default app_tenant_id(),
  subscription text not null,
  event_id uuid not null,
  processed_at timestamptz not null default now(),
  primary key (tenant_id, subscription, event_id)
);
call make_tenant_table('processed_events');

-- Deliveries that exhausted their retries, for operators to inspect and replay.
create table dead_letters (
  id bigint generated always as identity primary key,
  queue text not null,
  event_id uuid,
  tenant_id uuid,
  name text,
  error text not null,
  payload jsonb not null default '{}',
  failed_at timestamptz not null default now()
);
revoke all on dead_letters from tenantry_app;
