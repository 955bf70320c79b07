-- Where an event came from, so an operator can follow one request into the events and jobs it
-- caused (docs/observability.md):
--   * request_id: the X-Request-Id of the request whose transaction wrote the event (or, for an
--     event a subscription wrote, of the request behind the event it was handling); null for
--     events written by jobs and tools;
--   * traceparent: the W3C trace context of the span that wrote it, while tracing is on, so the
--     relay's and each delivery's spans join the request's trace.
-- The audit trail keeps the request id beside each event. Both columns are nullable without a
-- default: adding them rewrites nothing.
alter table outbox add column request_id text, add column traceparent text;
alter table audit_events add column request_id text;
