-- The tenant is named without a foreign key to tenants: see framework/0006_tenants_are_kept.sql.
alter table subscriptions drop constraint if exists subscriptions_tenant_id_fkey;
alter table billing_charges drop constraint if exists billing_charges_tenant_id_fkey;
