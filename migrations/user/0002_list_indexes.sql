-- One index per sortable field of the user list, leading with the tenant (row-level security's
-- condition) and ending with id (the tie-breaker), on live rows: a page is read in order from
-- the index whatever the sort, direction or cursor. createdAt has users_list already.
create index users_by_updated on users (tenant_id, updated_at, id) where deleted_at is null;
create index users_by_email on users (tenant_id, email, id) where deleted_at is null;
create index users_by_display_name on users (tenant_id, display_name, id) where deleted_at is null;
create index users_by_status on users (tenant_id, status, id) where deleted_at is null;
