-- Content: Markdown pages and posts with a draft / published / archived lifecycle (docs/content.md).
create table contents (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null default app_tenant_id() references tenants (id),
  -- Stored normalised (NFKC, trimmed, lower-cased) by the service; the grammar is kept here too.
  slug text not null check (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$' and char_length(slug) <= 100),
  title text not null check (char_length(title) between 1 and 200),
  kind text not null check (kind in ('page', 'post')),
  -- Markdown as written; rendered and sanitised on every public read, never stored as HTML.
  body text not null check (char_length(body) <= 200000),
  status text not null default 'draft' check (status in ('draft', 'published', 'archived')),
  published_at timestamptz,
  author uuid not null references users (id),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz,
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
