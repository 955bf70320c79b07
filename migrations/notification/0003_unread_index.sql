-- The admin header counts the caller's unread notifications on every page: a partial index holds
-- only unread rows, so the count reads as many index entries as there are unread notifications.
create index notifications_unread on notifications (tenant_id, recipient_id) where read_at is null;
