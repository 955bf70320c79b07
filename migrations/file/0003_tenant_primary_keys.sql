-- Primary keys carry tenant_id, as framework/0016_tenant_primary_keys.sql says why (issue 49).
alter table files drop constraint files_pkey, add constraint files_pkey primary key (tenant_id, id);
