-- Throttling counters of the sign-in area, one row per counted attempt so every window slides.
-- Shared by every replica because it lives here. Like the outbox it is row-level secured without
-- FORCE: tenant transactions see only their tenant's rows, while the hourly sweep (running as the
-- owner, outside any tenant) purges old rows of every tenant in one statement.
create table auth_attempts (
  id bigint generated always as identity primary key,
  tenant_id uuid not null default app_tenant_id() references tenants (id),
  kind text not null check (kind in ('login', 'forgot', 'reset')),
  -- The client address the attempt came from.
  source text not null,
  -- For failed logins: SHA-256 of the lower-cased account address, so no address is stored.
  account bytea,
  at timestamptz not null default now()
);
create index auth_attempts_by_source on auth_attempts (tenant_id, kind, source, at);
create index auth_attempts_by_account on auth_attempts (tenant_id, account, at) where account is not null;
create index auth_attempts_age on auth_attempts (at);
alter table auth_attempts enable row level security;
create policy tenant_isolation on auth_attempts using (tenant_id = app_tenant_id()) with check (tenant_id = app_tenant_id());
