-- The caller's list pages by (created_at, id) in either direction: one index whose key columns go
-- the same way serves both orders, with no sort step (the first index mixed desc and asc).
create index notifications_by_recipient_created on notifications (tenant_id, recipient_id, created_at, id);
drop index notifications_by_recipient;
