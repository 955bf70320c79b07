-- A few questions must be answered across tenants inside a tenant's transaction ("is this plan
-- subscribed in any tenant?"), which tenantry_app cannot see. Such a question is a small
-- security-definer function owned by tenantry_cross_tenant: a role that cannot log in, bypasses
-- no row-level security, and may only read the tables a migration opens to it, through a policy
-- of its own. Roles are cluster-wide, hence the existence check.
do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'tenantry_cross_tenant') then
    create role tenantry_cross_tenant nologin nobypassrls;
  end if;
end
$$;
grant tenantry_cross_tenant to current_user;
grant usage on schema public to tenantry_cross_tenant;

-- Lets tenantry_cross_tenant read every tenant's rows of a table (and nothing else can use the policy).
create procedure allow_cross_tenant_read(tbl regclass)
  language plpgsql
  as $$
begin
  execute format('grant select on %s to tenantry_cross_tenant', tbl);
  execute format('create policy cross_tenant_read on %s for select to tenantry_cross_tenant using (true)', tbl);
end
$$;

-- Makes a function answer across tenants: security definer, owned by tenantry_cross_tenant, with a
-- fixed search path. Changing the owner needs CREATE on the schema for a moment.
create procedure make_cross_tenant_function(fn regprocedure)
  language plpgsql
  as $$
begin
  execute format('alter function %s security definer set search_path = pg_catalog, public', fn);
  grant create on schema public to tenantry_cross_tenant;
  execute format('alter function %s owner to tenantry_cross_tenant', fn);
  revoke create on schema public from tenantry_cross_tenant;
end
$$;
