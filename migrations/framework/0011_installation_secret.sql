-- The installation's secret: 32 bytes made once, here, on the first start (whatever the machine,
-- with no configuration), the same for every process on this database and kept across restarts.
-- Each process reads it at boot (framework/access/installation-secret.ts) and derives a key per
-- purpose from it; the cursors of lists are signed with one (framework/operations/cursor.ts).
-- Made by PostgreSQL's own strong random source (two random UUIDs: 244 random bits), so the value
-- never travels as a statement parameter that a log could show.
-- Global, and none of the restricted role's: no tenant transaction can read it.
create table installation_secret (
  id boolean primary key default true check (id),
  secret bytea not null check (octet_length(secret) = 32),
  created_at timestamptz not null default now()
);
revoke all on installation_secret from tenantry_app;
insert into installation_secret (secret)
values (decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));
