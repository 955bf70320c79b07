-- replaces: 0001_users.sql, 0002_list_indexes.sql
-- The users table is the framework's since framework/0013_identity.sql (its core: id, tenant_id,
-- status, roles and the timestamps); this module adds what it keeps of a person: the address,
-- the name, the password hash, which statuses exist, and the indexes of its list. On a database
-- where 0001 and 0002 ran, all of it is there and nothing changes; on a new one they do not run
-- (the header above) and this file makes the same table.
alter table users
  add column if not exists email text not null check (length(email) between 3 and 320),
  add column if not exists display_name text not null default '' check (length(display_name) <= 200),
  add column if not exists password_hash text,
  alter column status set default 'invited';
do $$
begin
  if not exists (select 1 from pg_constraint where conrelid = 'users'::regclass and conname = 'users_status_check') then
    alter table users add constraint users_status_check check (status in ('invited', 'active', 'deactivated'));
  end if;
end
$$;
-- Addresses compare case-insensitively; a soft-deleted user releases the address.
create unique index if not exists users_email_unique on users (tenant_id, lower(email)) where deleted_at is null;
-- One index per sortable field of the user list, leading with the tenant (row-level security's
-- condition) and ending with id (the tie-breaker), on live rows.
create index if not exists users_list on users (tenant_id, created_at, id) where deleted_at is null;
create index if not exists users_by_updated on users (tenant_id, updated_at, id) where deleted_at is null;
create index if not exists users_by_email on users (tenant_id, email, id) where deleted_at is null;
create index if not exists users_by_display_name on users (tenant_id, display_name, id) where deleted_at is null;
create index if not exists users_by_status on users (tenant_id, status, id) where deleted_at is null;
