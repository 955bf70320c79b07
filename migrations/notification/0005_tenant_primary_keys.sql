-- Primary keys carry tenant_id, as framework/0016_tenant_primary_keys.sql says why (issue 49).
alter table notifications drop constraint notifications_pkey, add constraint notifications_pkey primary key (tenant_id, id);
