-- replaces: 0001_sessions_roles.sql, 0005_access_tokens.sql
-- roles, sessions and access_tokens are the framework's since framework/0013_identity.sql; this
-- module adds what it keeps of a token: the name a person gave it, and the index of a user's own
-- list. On a database where 0001 and 0005 ran, all of it is there and nothing changes; on a new
-- one they do not run (the header above).
alter table access_tokens add column if not exists name text not null check (length(name) between 1 and 100);
-- A user's own list, newest first.
create index if not exists access_tokens_by_user on access_tokens (tenant_id, user_id, created_at);
