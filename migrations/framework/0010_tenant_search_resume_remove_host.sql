-- The operator's tenant list searches by name, slug or host (q): a substring, case-insensitive,
-- answered from trigram indexes, so a search costs about the same at 100 tenants and at 10,000.
-- pg_trgm is a trusted extension (PostgreSQL 13+): the database's owner may create it.
create extension if not exists pg_trgm;
create index tenants_search on tenants using gin (lower(name || ' ' || slug) gin_trgm_ops);
create index tenant_hosts_search on tenant_hosts using gin (host gin_trgm_ops);

-- Lifts a suspension; true when it changed (a suspended tenant). Nothing to evict from the host
-- caches: they keep served tenants only, so the next request asks the database again.
create function tenant_resume(p_tenant uuid) returns boolean
  language plpgsql security definer
  set search_path = pg_catalog, public
  as $$
begin
  perform public.require_operator_tenant();
  update public.tenants set status = 'active', updated_at = now()
   where id = p_tenant and status = 'suspended';
  return found;
end
$$;

-- Removes one of a tenant's hosts; the answer says what happened: 'removed', 'last' (refused: a
-- tenant keeps at least one host, the one its mailed links are built on) or 'absent' (not this
-- tenant's host). Removing the primary host makes the oldest remaining host primary.
create function tenant_remove_host(p_tenant uuid, p_host text) returns text
  language plpgsql security definer
  set search_path = pg_catalog, public
  as $$
declare
  was_primary boolean;
begin
  perform public.require_operator_tenant();
  select is_primary into was_primary from public.tenant_hosts where tenant_id = p_tenant and host = p_host;
  if not found then
    return 'absent';
  end if;
  if (select count(*) from public.tenant_hosts where tenant_id = p_tenant) = 1 then
    return 'last';
  end if;
  delete from public.tenant_hosts where tenant_id = p_tenant and host = p_host;
  if was_primary then
    update public.tenant_hosts set is_primary = true
     where host = (select host from public.tenant_hosts where tenant_id = p_tenant order by created_at, host limit 1);
  end if;
  update public.tenants set updated_at = now() where id = p_tenant;
  return 'removed';
end
$$;

revoke execute on function tenant_resume(uuid), tenant_remove_host(uuid, text) from public;
grant execute on function tenant_resume(uuid), tenant_remove_host(uuid, text) to tenantry_app;
