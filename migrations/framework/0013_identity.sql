-- The identity schema is the framework's (docs/architecture.md, "The identity schema"): the opening
-- statement of every transaction resolves the caller through sessions (or access_tokens), users
-- and roles, tenant creation seeds roles, and the request path opens, touches and ends sessions.
-- This file creates those tables with the columns the framework reads and writes; modules add
-- columns (the user module: email, display_name, password_hash; auth: a token's name) and tables
-- of their own in their migrations.
--
-- Until this migration the user and auth modules created these tables (user/0001_users.sql,
-- auth/0001_sessions_roles.sql, auth/0005_access_tokens.sql). On a database where they ran, each
-- table is there already and is left as it is: it has every column below. On a new database the
-- framework creates them here, and those module files are replaced (their `-- replaces:` headers,
-- user/0004 and auth/0006, framework/db/migrate.ts), so they do not run.
do $$
begin
  if to_regclass('users') is null then
    -- The core of a person: the framework resolves a session only for a live user whose status
    -- is 'active', and turns the roles they hold into permissions. Which statuses exist, and what
    -- else a person has, is the module's that manages people.
    create table users (
      id uuid primary key default gen_random_uuid(),
      tenant_id uuid not null default app_tenant_id(),
      status text not null,
      roles text[] not null default '{}',
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      deleted_at timestamptz,
      -- sessions, access_tokens and set_password_tokens name a user by (tenant_id, user_id).
      unique (tenant_id, id)
    );
    call make_tenant_table('users');
  end if;

  if to_regclass('roles') is null then
    -- A tenant's name for a set of permissions; '*' grants all. Every new tenant gets admin and member.
    create table roles (
      tenant_id uuid not null default app_tenant_id(),
      name text not null check (name ~ '^[a-z0-9][a-z0-9_.:-]{0,62}$'),
      permissions text[] not null default '{}',
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (tenant_id, name)
    );
    call make_tenant_table('roles');
  end if;

  if to_regclass('sessions') is null then
    -- Only the SHA-256 of a session id is stored.
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
  end if;

  if to_regclass('access_tokens') is null then
    -- Personal access tokens (Authorization: Bearer): only the SHA-256 of a token is stored; its
    -- permissions count only where the user's roles still grant them.
    create table access_tokens (
      id uuid primary key default gen_random_uuid(),
      tenant_id uuid not null default app_tenant_id(),
      user_id uuid not null,
      token_hash bytea not null,
      permissions text[] not null default '{}',
      created_at timestamptz not null default now(),
      expires_at timestamptz not null,
      last_used_at timestamptz,
      foreign key (tenant_id, user_id) references users (tenant_id, id),
      unique (tenant_id, token_hash)
    );
    call make_tenant_table('access_tokens');
  end if;
end
$$;
