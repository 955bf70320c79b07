-- The web origins whose pages may call a tenant's API with a personal access token (CORS,
-- framework/http/cors.ts), beside the installation's own (server.cors_origins). A setting of the
-- tenant, kept on its row so that it travels with the tenant its host resolves to (the host
-- cache) and costs a request nothing to read. Each is an origin as a browser sends it
-- (scheme://host[:port], lower-case), checked by the service before it is stored.
alter table tenants add column cors_origins text[] not null default '{}'
  check (cardinality(cors_origins) <= 50);

-- The restricted role may not write tenants (0003_control_plane_writes.sql). A tenant sets its
-- own origins, and only its own: the transaction's tenant, never a tenant named by the caller.
-- The hosts' caches of every process drop the tenant when the transaction commits, so the next
-- request reads the new list.
create function tenant_set_cors_origins(p_origins text[]) returns void
  language plpgsql security definer
  set search_path = pg_catalog, public
  as $$
begin
  if public.app_tenant_id() is null then
    raise exception 'a tenant sets its own CORS origins, inside its own transaction'
      using errcode = 'insufficient_privilege';
  end if;
  update public.tenants set cors_origins = p_origins, updated_at = now() where id = public.app_tenant_id();
  perform pg_notify('tenantry_hosts', public.app_tenant_id()::text);
end
$$;

revoke execute on function tenant_set_cors_origins(text[]) from public;
grant execute on function tenant_set_cors_origins(text[]) to tenantry_app;
