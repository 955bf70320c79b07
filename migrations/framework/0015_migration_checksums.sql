-- Each applied migration's SHA-256 (framework/db/migrate.ts): a start finding an applied file
-- changed or missing refuses, naming it. The rows of files applied before this one get theirs on
-- this start, from the files as they are now.
alter table migration_history add column if not exists checksum text;
