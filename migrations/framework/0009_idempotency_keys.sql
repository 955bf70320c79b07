-- Idempotent POSTs (Stripe's Idempotency-Key convention, docs/api-conventions.md "Idempotent
-- requests"): one row per tenant, caller and key, written in the same transaction as the
-- request's effect, with the answer it gave, so a retry replays that answer instead of acting
-- again. A concurrent request with the same key waits on the primary key until the first one
-- commits (then replays) or rolls back (then acts itself). request_hash is the SHA-256 of the
-- method, path and body: the same key with another request is refused. The framework's
-- idempotency-key-purge job deletes rows older than 24 hours; older rows still present are
-- treated as absent.
create table idempotency_keys (
  tenant_id uuid not null default app_tenant_id(),
  user_id uuid not null,
  key text not null check (length(key) between 1 and 255),
  request_hash bytea not null,
  -- Null only inside the transaction that claimed the key, until its answer is known.
  status smallint,
  body jsonb,
  location text,
  created_at timestamptz not null,
  primary key (tenant_id, user_id, key)
);
create index idempotency_keys_created_at on idempotency_keys (tenant_id, created_at);
call make_tenant_table('idempotency_keys');
