-- Primary keys carry tenant_id, as framework/0016_tenant_primary_keys.sql says why (issue 49).
alter table billing_charges drop constraint billing_charges_pkey, add constraint billing_charges_pkey primary key (tenant_id, id);
alter table subscriptions drop constraint subscriptions_pkey, add constraint subscriptions_pkey primary key (tenant_id, id);
