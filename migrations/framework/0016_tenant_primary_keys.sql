-- Every tenant table's primary key carries tenant_id (issue 49: a schema Citus can distribute by
-- tenant_id, checked by test/framework/distribution-readiness.test.ts): a key of (id) alone cannot
-- be enforced once rows of one table live on several nodes. Ids stay generated and unique in
-- practice; the key becomes (tenant_id, id), which every read by id within a tenant uses as well.
-- The framework's tables here; each module's migrations change its own.

-- import_refusals names its import by (tenant_id, import_id), so both tables can sit on the same node.
alter table import_refusals drop constraint import_refusals_import_id_fkey;
alter table imports drop constraint imports_pkey, add constraint imports_pkey primary key (tenant_id, id);
alter table import_refusals
  add constraint import_refusals_import_id_fkey foreign key (tenant_id, import_id)
    references imports (tenant_id, id) on delete cascade;

alter table tenant_exports drop constraint tenant_exports_pkey, add constraint tenant_exports_pkey primary key (tenant_id, id);

-- A table's primary key becomes (tenant_id, id), unless it carries tenant_id already, or a foreign
-- key still names the table's id alone (a module's migration not yet run: content/0001's author
-- before content/0004). Then it is left as it is, and the migration that turns that foreign key
-- composite calls this again once it has (content/0005).
create procedure tenant_primary_key(tbl regclass)
  language plpgsql
  as $$
declare
  key record;
begin
  select c.conname, c.conindid, 'tenant_id' = any (array(select a.attname::text from unnest(c.conkey) k
           join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k)) as has_tenant
    into key from pg_constraint c where c.conrelid = tbl and c.contype = 'p';
  if key.has_tenant then return; end if;
  if exists (select 1 from pg_constraint f where f.contype = 'f' and f.confrelid = tbl and f.conindid = key.conindid) then
    raise notice 'the primary key of % stays (id) while a foreign key names it', tbl;
    return;
  end if;
  execute format('alter table %s drop constraint %I, add constraint %I primary key (tenant_id, id)',
                 tbl, key.conname, key.conname);
end
$$;

-- users keeps its unique (tenant_id, id), which other tables' foreign keys name.
call tenant_primary_key('users');
alter table sessions drop constraint sessions_pkey, add constraint sessions_pkey primary key (tenant_id, id);
alter table access_tokens drop constraint access_tokens_pkey, add constraint access_tokens_pkey primary key (tenant_id, id);
