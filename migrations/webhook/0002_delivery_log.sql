-- The delivery log: one row per attempt to deliver a message to an endpoint, kept 30 days (the
-- webhook-delivery-log-purge job). data keeps the event payload sent, for "send again"; SPEC's
-- payload policy keeps addresses, bodies and links out of it. endpoint_id has no foreign key: the
-- log of a deleted (soft-deleted) endpoint stays readable until it ages out.
create table webhook_deliveries (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null default app_tenant_id(),
  endpoint_id uuid not null,
  message_id text not null,
  event_type text not null,
  message_created_at timestamptz not null,
  data jsonb not null,
  attempt integer not null check (attempt >= 1),
  status text not null check (status in ('succeeded', 'failed', 'refused', 'dead')),
  http_status integer,
  duration_ms integer not null check (duration_ms >= 0),
  error text,
  created_at timestamptz not null default now()
);
-- An endpoint's log, newest first.
create index webhook_deliveries_by_endpoint on webhook_deliveries (tenant_id, endpoint_id, created_at, id);
-- The purge's walk by age, per tenant.
create index webhook_deliveries_by_age on webhook_deliveries (tenant_id, created_at);
call make_tenant_table('webhook_deliveries');
