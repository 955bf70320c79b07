-- History (docs/history.md): one revision per create, PATCH, delete, command and restore of an
-- entity that keeps history, written by the framework in the write's own transaction. A tenant's
-- rows, under row-level security like every other. The framework owns the table: no module writes
-- it, and the restricted role may add and (for the retention job) remove revisions, never change one.
--
-- id: a UUIDv7 made in the process from the transaction's time, so the key takes revisions as
-- appends and orders them in time. entity: '<module>.<entity>'. old_values and new_values: the
-- changed fields (field name → value as the API shows it), old_values empty for a create; a field
-- declared unrecorded, or secret, is never among them. actor_kind: user (a session), token (a
-- personal access token, actor_name its name), job (actor_name the job's), subscription
-- (actor_name the subscription's), operator (the installation's operator acting on this tenant: no
-- user named), system (none of these).
create table revisions (
  tenant_id uuid not null default app_tenant_id(),
  id uuid not null,
  entity text not null,
  row_id uuid not null,
  at timestamptz not null,
  actor_id uuid,
  actor_kind text not null check (actor_kind in ('user', 'token', 'job', 'subscription', 'operator', 'system')),
  actor_name text,
  operation text not null,
  old_values jsonb not null default '{}',
  new_values jsonb not null default '{}',
  primary key (tenant_id, id)
);
-- A record's history, newest first: GET .../{id}/history reads a page from it (one statement).
create index revisions_of_row on revisions (tenant_id, entity, row_id, id);
call make_tenant_table('revisions');
revoke update on revisions from tenantry_app;

-- Who acted, beside the user's id, for the tenant's activity (GET /api/v1/audit/activity): the
-- outbox carries it from the write to the audit trail the relay records. Nullable without a
-- default: adding the columns rewrites neither table. Null kind: a user when actor_id is set, else
-- the system (every event written before these columns).
alter table outbox add column actor_kind text, add column actor_name text;
alter table audit_events add column actor_kind text, add column actor_name text;

-- The activity list pages the trail newest first by time, ties broken by the event id: the index
-- on time gains the id (still one index; the relay writes it as before).
drop index audit_events_by_time;
create index audit_events_by_time on audit_events (tenant_id, occurred_at, event_id);
