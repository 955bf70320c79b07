-- The outbox relay asks, for each batch of events, which of their tenants have a live endpoint
-- (webhook-fan-out's onlyTenantsWith): the events of any other tenant queue no fan-out job. It
-- asks as tenantry_cross_tenant, which may read this table through a policy of its own.
call allow_cross_tenant_read('webhook_endpoints');
