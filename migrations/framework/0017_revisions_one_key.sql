-- History's write cost (issue 46 point 7, docs/performance.md "History cost"): a revision had two
-- index entries, the primary key (tenant_id, id) and revisions_of_row (tenant_id, entity, row_id,
-- id). One key now serves every read of the table: (tenant_id, row_id, id). A record's history is
-- a range of it in time order (its ids are UUIDv7 of the write's time); a revision is always read
-- with its record (the history route, a restore), never by its id alone; the retention job walks
-- it in key order (framework/history/retention.ts). entity stays a column every read compares, out
-- of the key: row ids are UUIDs no two records share, and without it the key is 16 bytes a
-- revision shorter (measured: 389 WAL bytes an insert against 424 with entity in the key, 555 with
-- the two indexes; each create's or PATCH's revision touches 3 buffers instead of 5 and writes 2
-- WAL records instead of 3). Still led by tenant_id: a key Citus can distribute by
-- (test/framework/distribution-readiness.test.ts). Existing revisions are kept: any two of them
-- already differed in (tenant_id, id), so they differ in the new key.
alter table revisions drop constraint revisions_pkey;
drop index revisions_of_row;
alter table revisions add constraint revisions_pkey primary key (tenant_id, row_id, id);
