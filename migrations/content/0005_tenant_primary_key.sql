-- replaces: 0001_contents.sql, 0002_public_read_changes.sql, 0003_contents_without_tenant_key.sql, 0004_author_within_tenant.sql
-- The content's primary key carries tenant_id (issue 49; framework/0016_tenant_primary_keys.sql says
-- why). users' key is (tenant_id, id) since framework/0016, which runs before any module's file, so
-- 0001's `references users (id)` no longer finds a key on a new database: this file stands in for
-- 0001-0004 there (framework/db/migrate.ts, `-- replaces:`) and creates the table as they leave it.
-- Where they ran, the table is there and only its keys change.
do $$
begin
  if to_regclass('contents') is null then
    -- Content: Markdown pages and posts with a draft / published / archived lifecycle (docs/content.md).
    create table contents (
      id uuid not null default gen_random_uuid(),
      tenant_id uuid not null default app_tenant_id(),
      -- Stored normalised (NFKC, trimmed, lower-cased) by the service; the grammar is kept here too.
      slug text not null check (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$' and char_length(slug) <= 100),
      title text not null check (char_length(title) between 1 and 200),
      kind text not null check (kind in ('page', 'post')),
      -- Markdown as written; rendered and sanitised on every public read, never stored as HTML.
      body text not null check (char_length(body) <= 200000),
      status text not null default 'draft' check (status in ('draft', 'published', 'archived')),
      published_at timestamptz,
      author uuid not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      deleted_at timestamptz,
      constraint contents_pkey primary key (tenant_id, id),
      -- The author names a user of the content's own tenant (0004).
      constraint contents_author_fkey foreign key (tenant_id, author) references users (tenant_id, id),
      -- A published row has its publication time and a draft none; an archived row keeps the time it
      -- was published at (or none, archived from a draft) until an unpublish clears it.
      constraint contents_published_at_matches_status check (
        (status = 'published' and published_at is not null)
        or (status = 'draft' and published_at is null)
        or status = 'archived'
      )
    );
    -- Unique per tenant among live rows: a soft delete releases the slug. Also the public read's lookup.
    create unique index contents_slug_unique on contents (tenant_id, slug) where deleted_at is null;
    create index contents_list on contents (tenant_id, created_at, id) where deleted_at is null;
    create index contents_by_updated on contents (tenant_id, updated_at, id) where deleted_at is null;
    create index contents_by_slug on contents (tenant_id, slug, id) where deleted_at is null;
    create index contents_by_title on contents (tenant_id, title, id) where deleted_at is null;
    create index contents_by_published on contents (tenant_id, published_at, id) where deleted_at is null;
    call make_tenant_table('contents');
    -- Every write evicts the tenant's cached ETags of public pages in every process.
    call watch_public_read('contents');
  else
    -- What 0003 and 0004 did, where they had not run: no foreign key to tenants, the author within
    -- the tenant.
    alter table contents drop constraint if exists contents_tenant_id_fkey;
    alter table contents
      drop constraint if exists contents_author_fkey,
      add constraint contents_author_fkey foreign key (tenant_id, author) references users (tenant_id, id);
    alter table contents drop constraint contents_pkey, add constraint contents_pkey primary key (tenant_id, id);
  end if;
end
$$;
-- The framework left users keyed by id where 0001's foreign key named it (framework/0016): now
-- that no key does, the framework's procedure gives users its key with tenant_id (a no-op where done).
call tenant_primary_key('users');
