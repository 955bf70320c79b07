-- The public read's validator cache (framework/context/public-read-cache.ts) answers a current
-- If-None-Match without the database. Every write to a table with a public read tells every
-- process which tenant's entries to drop: NOTIFY is delivered on commit, and only if it commits.
-- A NOTIFY makes its commit take a cluster-wide lock, so only the (rare) writes of these tables
-- pay for it, never the request path's other writes.
create function tenantry_public_read_changed() returns trigger
  language plpgsql
  as $$
begin
  perform pg_notify('tenantry_public_read',
    tg_table_name || ' ' || (case when tg_op = 'DELETE' then old.tenant_id else new.tenant_id end)::text);
  return null;
end
$$;

-- Called by the migration of every table an entity reads publicly; a boot check insists on it.
create procedure watch_public_read(tbl regclass)
  language plpgsql
  as $$
begin
  execute format(
    'create trigger public_read_changed after insert or update or delete on %s for each row execute function tenantry_public_read_changed()',
    tbl);
end
$$;
