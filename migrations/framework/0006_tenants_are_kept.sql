-- Tenant-owned rows name their tenant without a foreign key to tenants (each module drops its own;
-- docs/architecture.md, "Tenant isolation"). Such a key locks the tenant's row FOR KEY SHARE on
-- every insert anywhere in that tenant: with many of them in flight, each lock makes a new
-- multixact, and every tenant's inserts queue on the one page the tenants table fills. What the
-- key guaranteed, that a row's tenant exists, holds because a row's tenant_id is the transaction's
-- tenant (row-level security's check, forced for the owner too) and a tenant row, once there,
-- stays: suspended, never deleted, its id never changed.
create function tenants_are_kept() returns trigger
  language plpgsql
  as $$
begin
  raise exception 'a tenant is suspended, never deleted or given another id: rows of other tables name it'
    using errcode = 'restrict_violation';
end
$$;
create trigger tenants_are_kept before delete or update of id on tenants
  for each row execute function tenants_are_kept();
create trigger tenants_are_kept_whole before truncate on tenants
  for each statement execute function tenants_are_kept();
