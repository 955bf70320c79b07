create table roles (
  tenant_id uuid not null default app_tenant_id() references tenants (id),
  name text not null check (name ~ '^[a-z0-9][a-z0-9_.:-]{0,62}$'),
  permissions text[] not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (tenant_id, name)
);
call make_tenant_table('roles');

create table sessions (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null default app_tenant_id(),
  id_hash bytea not null,
  user_id uuid not null,
  created_at timestamptz not null default now(),
  last_seen_at timestamptz not null default now(),
  expires_at timestamptz not null,
  user_agent text not null default '',
  ip text not null default '',
  foreign key (tenant_id, user_id) references users (tenant_id, id),
  unique (tenant_id, id_hash)
);
create index sessions_by_user on sessions (tenant_id, user_id);
create index sessions_expiry on sessions (tenant_id, expires_at);
call make_tenant_table('sessions');
