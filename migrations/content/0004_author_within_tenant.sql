-- The author names a user of the content's own tenant: the foreign key carries tenant_id, so the
-- database itself refuses another tenant's user, whatever the service checks (references in
-- content.entity.ts; users has its (tenant_id, id) key, framework/0013_identity.sql). A row already naming
-- another tenant's user stops this migration with PostgreSQL's message naming its key: give that
-- content an author of its own tenant, then start again.
alter table contents
  drop constraint contents_author_fkey,
  add constraint contents_author_fkey foreign key (tenant_id, author) references users (tenant_id, id);
