-- A set-password token: minted for an invitation or a reset, mailed as a link, redeemed once.
-- Only the SHA-256 of the token is stored, as for session ids.
create table set_password_tokens (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null default app_tenant_id(),
  user_id uuid not null,
  token_hash bytea not null,
  created_at timestamptz not null default now(),
  sent_at timestamptz not null default now(),
  expires_at timestamptz not null,
  used_at timestamptz,
  foreign key (tenant_id, user_id) references users (tenant_id, id),
  unique (tenant_id, token_hash)
);
-- One pending token per person: minting again replaces it in place.
create unique index set_password_tokens_one_pending on set_password_tokens (tenant_id, user_id) where used_at is null;
create index set_password_tokens_expiry on set_password_tokens (tenant_id, expires_at);
call make_tenant_table('set_password_tokens');
