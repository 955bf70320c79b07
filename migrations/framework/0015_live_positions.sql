-- Live changes (docs/api-conventions.md, "Live changes"): every list can be followed as a stream of
-- server-sent events, fed from the outbox after commit. The relay gives each event a stream could
-- show a position: a number that only grows within the tenant, counted in live_positions and
-- handed out under one lock, so a tenant's positions follow the order its changes were relayed
-- (the order of their commits, for the changes of one row). A client resuming a stream sends the
-- last position it saw (Last-Event-ID) and receives the events after it, on any web process.
--   * position: null until relayed, and for the events no stream shows.
--   * subject_entity, subject_id: the row a command changed, set on one event the command
--     published (a command publishes its own events, not the entity's updated event), so that a
--     stream of the entity learns of the change.
-- The index serves a stream's batch (a tenant's events after a position); the insert writes no
-- entry in it (its predicate), only the relay's mark does.
alter table outbox add column position bigint, add column subject_entity text, add column subject_id uuid;
create index outbox_live on outbox (tenant_id, position) where position is not null;

-- The last position handed out in each tenant. Global like the outbox (the relay writes every
-- tenant's as the owner), with row-level security for the restricted role, which reads its own
-- tenant's (where a stream starts) and writes none.
create table live_positions (
  tenant_id uuid primary key,
  position bigint not null
);
alter table live_positions enable row level security;
create policy tenant_isolation on live_positions using (tenant_id = app_tenant_id());
revoke insert, update, delete, truncate on live_positions from tenantry_app;
