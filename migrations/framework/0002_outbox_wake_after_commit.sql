-- A transaction that NOTIFYs holds one cluster-wide lock from the start of its commit to its end,
-- WAL flush included, so every request that published an event committed strictly one after
-- another (about 200 creates/s on one disk, whatever the concurrency). The relay is now woken
-- after the commit, by the process that committed (framework/events/outbox-signal.ts).
drop trigger outbox_notify on outbox;
drop function outbox_notify();
