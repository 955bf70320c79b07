-- The assignee names a user of the task's own tenant (references in task.entity.ts): until now
-- only the assign command's check kept it so; the foreign key carrying tenant_id makes the
-- database refuse another tenant's user, or an id naming nobody. Users are never deleted (a
-- deactivation keeps the row), so every assignee the command wrote is there. A row naming someone
-- else stops this migration with PostgreSQL's message naming its key: unassign it, then start again.
alter table tasks
  add constraint tasks_assignee_id_fkey foreign key (tenant_id, assignee_id) references users (tenant_id, id);
