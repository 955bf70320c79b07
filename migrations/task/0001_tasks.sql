-- Work items with a deadline and a recorded SLA breach. assignee_id has no foreign key: users are
-- the user module's, and assign checks the user through its service.
create table tasks (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null default app_tenant_id() references tenants (id),
  title text not null,
  description text,
  status text not null default 'open' check (status in ('open', 'acknowledged', 'in_progress', 'resolved', 'closed')),
  priority text not null check (priority in ('low', 'medium', 'high', 'critical')),
  deadline timestamptz not null,
  assignee_id uuid,
  sla_breached boolean not null default false,
  resolved_at timestamptz,
  resolution text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create index tasks_list on tasks (tenant_id, created_at, id) where deleted_at is null;
create index tasks_by_updated on tasks (tenant_id, updated_at, id) where deleted_at is null;
create index tasks_by_title on tasks (tenant_id, title, id) where deleted_at is null;
create index tasks_by_status on tasks (tenant_id, status, id) where deleted_at is null;
create index tasks_by_deadline on tasks (tenant_id, deadline, id) where deleted_at is null;
-- What the SLA sweep looks for: live, unbreached, unresolved tasks by deadline.
create index tasks_sla_due on tasks (tenant_id, deadline) where deleted_at is null and not sla_breached and status not in ('resolved', 'closed');
call make_tenant_table('tasks');
