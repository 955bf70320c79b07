-- An import made with a personal access token runs later, in a worker, with no request: the
-- token's name is kept with the upload (created_by_name, as outbox.actor_name names a token), so
-- that the rows it creates are the token's in history and in the tenant's activity (kind token, the
-- person and the token's name), as a create sent with that token is. Null: the upload came with a
-- session. Nullable without a default: adding the column rewrites nothing.
alter table imports add column created_by_name text check (length(created_by_name) between 1 and 100);
