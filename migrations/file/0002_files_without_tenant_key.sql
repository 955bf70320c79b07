-- The tenant is named without a foreign key to tenants: see framework/0006_tenants_are_kept.sql.
alter table files drop constraint if exists files_tenant_id_fkey;
