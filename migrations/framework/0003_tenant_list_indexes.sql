-- The tenant list reads each of its sorts (createdAt, slug, name) from an index in that order,
-- ties broken by id, so a page and a keyset cursor cost the same at any depth.
create index tenants_by_created on tenants (created_at, id);
create index tenants_by_slug on tenants (slug, id);
create index tenants_by_name on tenants (name, id);
