-- Per-person messages. recipient_id has no foreign key on purpose: a notice outlives nothing it
-- must cascade with, and Notify is its only writer.
create table notifications (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null default app_tenant_id() references tenants (id),
  recipient_id uuid not null,
  title text not null check (length(title) between 1 and 200 and title !~ '[\r\n]'),
  body text not null default '' check (length(body) <= 10000),
  -- A path within the application, never an absolute URL.
  link text not null default '' check (link = '' or (link ~ '^/' and link !~ '^//' and length(link) <= 2000)),
  read_at timestamptz,
  created_at timestamptz not null default now()
);
create index notifications_by_recipient on notifications (tenant_id, recipient_id, created_at desc, id);
call make_tenant_table('notifications');
