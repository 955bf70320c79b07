-- A plan's limits (docs/billing.md "Entitlements"): declared limit name → value, e.g.
-- {"user.seats": 5}; a limit not named has no bound. Read with the plan's features by the opening
-- statement of every signed-in request.
alter table plans add column limits jsonb not null default '{}';
