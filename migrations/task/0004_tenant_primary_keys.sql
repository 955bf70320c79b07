-- Primary keys carry tenant_id, as framework/0016_tenant_primary_keys.sql says why (issue 49).
alter table tasks drop constraint tasks_pkey, add constraint tasks_pkey primary key (tenant_id, id);
