-- The outbox keeps two indexes: its key, and the unrelayed rows the relay claims. Every index is
-- written twice per event, once by the insert and once by the relay's mark (which cannot be a
-- HOT update: the claim index's predicate names relayed_at), so each one costs two index entries
-- and their WAL on every write request.
--   * event_id is made by gen_random_uuid() and nothing looks an outbox row up by it; the places
--     where it must be unique (the audit trail, a subscription's processed events) have their own keys.
--   * The purge walks the oldest rows by id instead (framework/events/relay.ts): relayed rows
--     are the oldest ones, in id order near enough.
alter table outbox drop constraint outbox_event_id_key;
drop index outbox_relayed;
