-- The operator's override of one tenant's entitlements (PUT /api/v1/tenant/tenants/{id}/entitlements,
-- docs/billing.md "Entitlements"): null, none; else {"features": [...]} replacing the plan's list
-- and/or {"limits": {"user.seats": 10, "file.storage_bytes": null}} over the plan's limits (null:
-- no bound). Read by the opening statement with the tenant; written only through the function
-- below, which requires the operator tenant (tenants takes no write from the restricted role).
alter table tenants add column entitlements jsonb;

create function tenant_set_entitlements(p_tenant uuid, p_entitlements jsonb) returns boolean
  language plpgsql security definer
  set search_path = pg_catalog, public
  as $$
begin
  perform public.require_operator_tenant();
  update public.tenants set entitlements = p_entitlements, updated_at = now() where id = p_tenant;
  return found;
end
$$;
revoke all on function tenant_set_entitlements(uuid, jsonb) from public;
grant execute on function tenant_set_entitlements(uuid, jsonb) to tenantry_app;
