-- tenants and tenant_hosts are global (no row-level security: hosts are resolved before any
-- tenant is known), so a tenant transaction that could write them could rewrite another tenant's
-- hosts or status. The restricted role keeps reading them; every write goes through the
-- functions below, which run as the owner and first check that the transaction's tenant is the
-- operator tenant.
revoke insert, update, delete, truncate on tenants, tenant_hosts from tenantry_app;

-- Raises insufficient_privilege (42501) unless the transaction acts for the operator tenant.
create function require_operator_tenant() returns void
  language plpgsql stable security definer
  set search_path = pg_catalog, public
  as $$
begin
  if not exists (select 1 from public.tenants where id = public.app_tenant_id() and is_operator) then
    raise exception 'only the operator tenant may change tenants and their hosts'
      using errcode = 'insufficient_privilege';
  end if;
end
$$;

-- A tenant and its first (primary) host. The one exception to the operator check is the first
-- start: while no tenant exists at all, the operator tenant itself may be created.
create function tenant_create(p_id uuid, p_slug text, p_name text, p_host text, p_is_operator boolean) returns void
  language plpgsql security definer
  set search_path = pg_catalog, public
  as $$
begin
  if not (p_is_operator and not exists (select 1 from public.tenants)) then
    perform public.require_operator_tenant();
  end if;
  insert into public.tenants (id, slug, name, is_operator) values (p_id, p_slug, p_name, p_is_operator);
  insert into public.tenant_hosts (host, tenant_id, is_primary) values (p_host, p_id, true);
end
$$;

-- Adds a host; a primary one demotes the previous primary to a plain host.
create function tenant_add_host(p_tenant uuid, p_host text, p_primary boolean) returns void
  language plpgsql security definer
  set search_path = pg_catalog, public
  as $$
begin
  perform public.require_operator_tenant();
  if p_primary then
    update public.tenant_hosts set is_primary = false where tenant_id = p_tenant and is_primary;
  end if;
  insert into public.tenant_hosts (host, tenant_id, is_primary) values (p_host, p_tenant, p_primary);
  update public.tenants set updated_at = now() where id = p_tenant;
end
$$;

-- Suspends a customer tenant; true when it changed (an active, non-operator tenant).
create function tenant_suspend(p_tenant uuid) returns boolean
  language plpgsql security definer
  set search_path = pg_catalog, public
  as $$
begin
  perform public.require_operator_tenant();
  update public.tenants set status = 'suspended', updated_at = now()
   where id = p_tenant and status = 'active' and not is_operator;
  return found;
end
$$;

-- Holds a tenant's row until the transaction ends (SELECT ... FOR UPDATE needs UPDATE privilege),
-- so a suspension and an invitation of the same tenant serialise.
create function tenant_lock(p_tenant uuid) returns void
  language plpgsql security definer
  set search_path = pg_catalog, public
  as $$
begin
  perform public.require_operator_tenant();
  perform 1 from public.tenants where id = p_tenant for update;
end
$$;

revoke execute on function require_operator_tenant(), tenant_create(uuid, text, text, text, boolean),
  tenant_add_host(uuid, text, boolean), tenant_suspend(uuid), tenant_lock(uuid) from public;
grant execute on function require_operator_tenant(), tenant_create(uuid, text, text, text, boolean),
  tenant_add_host(uuid, text, boolean), tenant_suspend(uuid), tenant_lock(uuid) to tenantry_app;
