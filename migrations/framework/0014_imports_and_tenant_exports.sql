-- Imports as jobs (issue 48, point 4; docs/api-conventions.md, "Imports"): an upload of CSV or
-- NDJSON rows for one entity's list, kept in the blob store (storage_key) until a worker has gone
-- through it. Progress is committed with each batch of rows it writes (lines_done: the last line
-- whose outcome is committed), so a retried job resumes after it and never writes a row twice.
create table imports (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null default app_tenant_id(),
  -- The entity's key, <module>.<entity>: whose create schema and operations the rows go through.
  resource text not null,
  format text not null check (format in ('csv', 'ndjson')),
  dry_run boolean not null default false,
  status text not null default 'queued' check (status in ('queued', 'running', 'done', 'failed')),
  -- The upload, until the import is over (then removed, and this set to null).
  storage_key uuid,
  size bigint not null check (size >= 0),
  rows_read integer not null default 0,
  created integer not null default 0,
  refused integer not null default 0,
  lines_done integer not null default 0,
  -- Why an import stopped before its end (a header naming no field, bytes that are no CSV).
  problem jsonb,
  created_by uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  finished_at timestamptz
);
create index imports_by_resource on imports (tenant_id, resource, created_at, id);
call make_tenant_table('imports');

-- Each refused row: its line in the upload and the problem, as the create route would answer it.
create table import_refusals (
  tenant_id uuid not null default app_tenant_id(),
  import_id uuid not null references imports (id) on delete cascade,
  line integer not null,
  problem jsonb not null,
  primary key (tenant_id, import_id, line)
);
call make_tenant_table('import_refusals');

-- A whole tenant's export (issue 48, point 5; docs/operations.md, "A tenant's export"): one
-- archive in the blob store, its manifest's counts and digests kept here once it is written.
create table tenant_exports (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null default app_tenant_id(),
  status text not null default 'queued' check (status in ('queued', 'running', 'done', 'failed')),
  storage_key uuid,
  size bigint,
  sha256 text,
  manifest jsonb,
  problem jsonb,
  created_by uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  finished_at timestamptz,
  -- After it the archive is removed and its link no longer answers.
  expires_at timestamptz
);
create index tenant_exports_list on tenant_exports (tenant_id, created_at, id);
call make_tenant_table('tenant_exports');

-- The file module's reconcile job (no tenant) removes blobs no row names: it asks here too which
-- of its keys an import's upload or an export's archive holds, in any tenant. Only keys it was given.
create function framework_blob_keys_named(keys uuid[]) returns setof uuid
  language sql stable
  as $$
    select storage_key from imports where storage_key = any(keys)
    union all
    select storage_key from tenant_exports where storage_key = any(keys)
  $$;
call allow_cross_tenant_read('imports');
call allow_cross_tenant_read('tenant_exports');
call make_cross_tenant_function('framework_blob_keys_named(uuid[])');
