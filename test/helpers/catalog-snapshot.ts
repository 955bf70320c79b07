import type pg from 'pg';

/**
 * A table as the catalog describes it, as sorted lines that compare across databases: columns
 * (type, nullability, default), constraints (by name and definition), indexes (a unique one by
 * name too: uniqueCodes and ON CONFLICT name it; any other by its definition alone), row-level
 * security, policies and triggers.
 */
export interface TableSnapshot {
  columns: string[];
  constraints: string[];
  indexes: string[];
  security: string[];
  policies: string[];
  triggers: string[];
}

const COLUMNS = `
select c.relname as t, a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
         || case when a.attnotnull then ' not null' else '' end
         || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '') as line
  from pg_class c
  join pg_namespace n on n.oid = c.relnamespace and n.nspname = current_schema()
  join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
  left join pg_attrdef d on d.adrelid = c.oid and d.adnum = a.attnum
 where c.relname = any ($1::text[])`;

// Not-null constraints (contype n, PostgreSQL 18) are the columns' business.
const CONSTRAINTS = `
select c.relname as t, k.conname || ': ' || pg_get_constraintdef(k.oid) as line
  from pg_constraint k
  join pg_class c on c.oid = k.conrelid
  join pg_namespace n on n.oid = c.relnamespace and n.nspname = current_schema()
 where k.contype <> 'n' and c.relname = any ($1::text[])`;

const INDEXES = `
select c.relname as t,
       case when x.indisunique then pg_get_indexdef(x.indexrelid)
            else regexp_replace(pg_get_indexdef(x.indexrelid), '^CREATE INDEX \\S+ ON', 'CREATE INDEX ON') end as line
  from pg_index x
  join pg_class c on c.oid = x.indrelid
  join pg_namespace n on n.oid = c.relnamespace and n.nspname = current_schema()
 where c.relname = any ($1::text[])`;

const SECURITY = `
select c.relname as t, 'row security ' || c.relrowsecurity || ', forced ' || c.relforcerowsecurity as line
  from pg_class c join pg_namespace n on n.oid = c.relnamespace and n.nspname = current_schema()
 where c.relkind = 'r' and c.relname = any ($1::text[])`;

const POLICIES = `
select c.relname as t,
       p.polname || ' ' || p.polcmd::text || ' to ' || coalesce((select string_agg(r.rolname, ',' order by r.rolname) from pg_roles r where r.oid = any (p.polroles)), 'public')
         || ' using ' || coalesce(pg_get_expr(p.polqual, p.polrelid), '-') || ' check ' || coalesce(pg_get_expr(p.polwithcheck, p.polrelid), '-') as line
  from pg_policy p
  join pg_class c on c.oid = p.polrelid
  join pg_namespace n on n.oid = c.relnamespace and n.nspname = current_schema()
 where c.relname = any ($1::text[])`;

const TRIGGERS = `
select c.relname as t, g.tgname || ' ' || f.proname as line
  from pg_trigger g
  join pg_proc f on f.oid = g.tgfoid
  join pg_class c on c.oid = g.tgrelid
  join pg_namespace n on n.oid = c.relnamespace and n.nspname = current_schema()
 where not g.tgisinternal and c.relname = any ($1::text[])`;

export async function snapshotTables(pool: pg.Pool, tables: readonly string[]): Promise<Map<string, TableSnapshot>> {
  const parts = ['columns', 'constraints', 'indexes', 'security', 'policies', 'triggers'] as const;
  const queries = [COLUMNS, CONSTRAINTS, INDEXES, SECURITY, POLICIES, TRIGGERS];
  const results = await Promise.all(queries.map((q) => pool.query<{ t: string; line: string }>(q, [[...tables]])));
  const snapshots = new Map<string, TableSnapshot>();
  for (const table of tables)
    snapshots.set(table, { columns: [], constraints: [], indexes: [], security: [], policies: [], triggers: [] });
  results.forEach((result, i) => {
    for (const row of result.rows) snapshots.get(row.t)![parts[i]!].push(row.line);
  });
  for (const snapshot of snapshots.values()) for (const part of parts) snapshot[part].sort();
  return snapshots;
}

/** Lines of `a` that `b` lacks, per part, as `<part>: <line>`. */
export function snapshotLinesMissing(a: TableSnapshot, b: TableSnapshot): string[] {
  return (Object.keys(a) as (keyof TableSnapshot)[]).flatMap((part) =>
    a[part].filter((line) => !b[part].includes(line)).map((line) => `${part}: ${line}`),
  );
}
