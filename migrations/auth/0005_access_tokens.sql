-- Personal access tokens (issue 33): a program authenticates with Authorization: Bearer <token>
-- instead of a session cookie. Only the SHA-256 of a token is stored, as for session ids; the raw
-- token is shown once, in the answer that creates it. The framework resolves a token in the opening
-- statement of every bearer request (framework/access/identity-tables.ts declares the columns it
-- reads), with the token's permissions intersected with the user's current ones.
-- Written by hand: npm run migration:new generates tables of entity definitions, and the auth
-- module's tables are no entities (like sessions and set_password_tokens).
create table access_tokens (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null default app_tenant_id(),
  user_id uuid not null,
  name text not null check (length(name) between 1 and 100),
  token_hash bytea not null,
  -- A subset of the user's permissions when it was made; counted only where the user still holds them.
  permissions text[] not null default '{}',
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  last_used_at timestamptz,
  foreign key (tenant_id, user_id) references users (tenant_id, id),
  unique (tenant_id, token_hash)
);
-- A user's own list, newest first.
create index access_tokens_by_user on access_tokens (tenant_id, user_id, created_at);
call make_tenant_table('access_tokens');
