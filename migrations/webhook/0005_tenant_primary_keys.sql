-- Primary keys carry tenant_id, as framework/0016_tenant_primary_keys.sql says why (issue 49).
alter table webhook_endpoints drop constraint webhook_endpoints_pkey, add constraint webhook_endpoints_pkey primary key (tenant_id, id);
alter table webhook_deliveries drop constraint webhook_deliveries_pkey, add constraint webhook_deliveries_pkey primary key (tenant_id, id);
