create table users (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null default app_tenant_id() references tenants (id),
  email text not null check (length(email) between 3 and 320),
  display_name text not null default '' check (length(display_name) <= 200),
  status text not null default 'invited' check (status in ('invited', 'active', 'deactivated')),
  roles text[] not null default '{}',
  password_hash text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz,
  unique (tenant_id, id)
);
-- Addresses compare case-insensitively; a soft-deleted user releases the address.
create unique index users_email_unique on users (tenant_id, lower(email)) where deleted_at is null;
create index users_list on users (tenant_id, created_at, id) where deleted_at is null;
call make_tenant_table('users');
