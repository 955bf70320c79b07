-- The tenant is named without a foreign key to tenants: see framework/0006_tenants_are_kept.sql.
alter table roles drop constraint if exists roles_tenant_id_fkey;
alter table auth_attempts drop constraint if exists auth_attempts_tenant_id_fkey;
