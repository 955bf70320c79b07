-- One row per stored blob. The row is written only once every byte is in storage, and deleted
-- before the blob is removed (file.deleted): a row always names a blob that exists or is an outage.
create table files (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null default app_tenant_id() references tenants (id),
  -- A UUID and nothing else: no name a caller chose ever reaches the storage.
  storage_key uuid not null,
  name text not null check (length(name) between 1 and 255),
  size bigint not null check (size >= 0),
  sha256 text not null check (sha256 ~ '^[0-9a-f]{64}$'),
  media_type text not null check (length(media_type) between 3 and 255),
  visibility text not null check (visibility in ('public', 'private')),
  uploaded_by uuid,
  created_at timestamptz not null default now()
);
-- Leads with tenant_id like every index here; the reconcile question, across tenants, reads it with
-- a skip scan over the tenants (PostgreSQL 18), once a night.
create unique index files_storage_key on files (tenant_id, storage_key);
create index files_list on files (tenant_id, created_at, id);
create index files_by_name on files (tenant_id, name, id);
create index files_by_size on files (tenant_id, size, id);
call make_tenant_table('files');

-- The reconcile job (no tenant) asks which of a batch of storage keys some row names, in any
-- tenant. It learns keys it already holds, never another tenant's rows.
create function file_keys_named(keys uuid[]) returns setof uuid
  language sql stable
  as $$ select storage_key from files where storage_key = any(keys) $$;
call allow_cross_tenant_read('files');
call make_cross_tenant_function('file_keys_named(uuid[])');
