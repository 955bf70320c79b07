import pg from 'pg';
import type { LiveSource } from './sources.ts';
import { quote } from '../operations/entity-sql.ts';
import { numberedFrom } from '../query/compile.ts';
import type { StreamFilter } from './stream-query.ts';

/**
 * The one statement a web process runs per tenant and batch, whatever the number of streams open
 * on the tenant: it reads the tenant's events after the earliest position a stream is at, checks
 * again every open stream's caller (session or personal access token, with the permissions their
 * stored roles grant now), reads each changed row once, and whether the tenant is still served
 * (active). It runs in a tenant transaction as the restricted role, so row-level security holds
 * every table it reads to the tenant. The streams' filters are evaluated in it too, on each changed
 * row as it reads it (batchStatement).
 *
 * Parameters: $1 the position after which events are read, $2 how many at most, $3 the sessions'
 * ids, $4 the tokens' ids, $5 the transaction's time.
 */

/** Events read per batch at most; a batch that reads as many is followed at once by another. */
export const BATCH_EVENTS = 500;

// The callers, resolved as the opening statement resolves them (context/opening.ts): a session
// while it lives, a token while it lives (its permissions intersected with its user's), for an
// active, undeleted user, with the permissions their roles grant now. No row: no caller. The roles
// are read once per user, not per session or token: a tenant's streams are mostly one user's many
// connections (1,000 streams over 100 sessions of one user: 100 reads of the roles became one).
const CALLERS = `
caller_sessions as (
  select s.id, s.user_id
    from sessions s
   where s.tenant_id = app_tenant_id() and s.id = any ($3::uuid[]) and s.expires_at > $5
),
caller_tokens as (
  select k.id, k.user_id, k.permissions
    from access_tokens k
   where k.tenant_id = app_tenant_id() and k.id = any ($4::uuid[]) and k.expires_at > $5
),
holders as materialized (
  select u.id, g.permissions
    from users u
    cross join lateral (select coalesce(array_agg(p), '{}') as permissions
                          from roles r cross join lateral unnest(r.permissions) p
                         where r.tenant_id = app_tenant_id() and r.name = any (u.roles)) g
   where u.tenant_id = app_tenant_id() and u.status = 'active' and u.deleted_at is null
     and u.id in (select user_id from caller_sessions union all select user_id from caller_tokens)
),
callers as (
  select 'session' as kind, s.id, h.permissions
    from caller_sessions s join holders h on h.id = s.user_id
  union all
  select 'token', k.id, array(select p from unnest(k.permissions) p where p = any (h.permissions) or '*' = any (h.permissions)
                              union
                              select p from unnest(h.permissions) p where '*' = any (k.permissions))
    from caller_tokens k join holders h on h.id = k.user_id
)`;

// An event's row: a command's changed row (subject), or the payload's id when it is a uuid.
const CHANGES = `
changes as materialized (
  select o.position, o.name, o.subject_entity, o.subject_id,
         case when o.payload->>'id' ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
              then (o.payload->>'id')::uuid end as row_id,
         extract(epoch from clock_timestamp() - o.occurred_at)::float8 as age
    from outbox o
   where o.tenant_id = app_tenant_id() and o.position > $1::bigint
   order by o.position
   limit $2
)`;

const literal = (value: string) => `'${value.replaceAll("'", "''")}'`;

/**
 * The rows of one source the batch's events name: each as its columns' text, whether it is live,
 * and whether it matches each of `filters` (SQL conditions of the list's compiler, on the table's
 * own columns, so the table is not aliased).
 */
function rowsOf(source: LiveSource, i: number, filters: readonly string[]): string {
  const names = [...source.kinds.keys()].map(literal).join(', ');
  const wanted = [
    ...(names ? [`select row_id from changes where name in (${names})`] : []),
    ...(source.subject ? [`select subject_id from changes where subject_entity = ${literal(source.subject)}`] : []),
  ].join(' union ');
  const t = source.table;
  const columns = source.columns.map((c) => `${t}.${quote(c)}::text`).join(', ');
  const matches = filters.length > 0 ? `json_build_array(${filters.join(', ')})` : `'[]'::json`;
  return `
r${i} as (
  select ${t}."id", json_build_array(${columns}) as cols, ${source.live ? `(${t}.${source.live})` : 'true'} as live,
         ${matches} as matches
    from ${t}
   where ${t}."id" in (${wanted})
)`;
}

/** The parameters every batch statement takes first ($1 to $5, above); the filters' come after. */
export const BATCH_PARAMETERS = 5;

/**
 * The statement for a tenant whose open streams follow these sources, and the filters its streams
 * hold on each (`filters[i]` for `sources[i]`, each evaluated once per changed row, whatever the
 * number of streams holding it): its text, and the filters' parameters, numbered after the batch's.
 * Without filters the text depends only on the sources (one text per set of them, prepared).
 */
export function batchStatement(
  sources: readonly LiveSource[],
  filters: readonly (readonly StreamFilter[])[] = [],
): { text: string; params: unknown[] } {
  const params: unknown[] = [];
  const conditions = sources.map((_, i) =>
    (filters[i] ?? []).map((filter) => {
      const placed = numberedFrom(filter.conditions, BATCH_PARAMETERS + params.length + 1);
      params.push(...filter.params);
      return `coalesce(${placed.map((c) => `(${c})`).join(' and ')}, false)`;
    }),
  );
  const ctes = [CHANGES, CALLERS, ...sources.map((source, i) => rowsOf(source, i, conditions[i]!))].join(',');
  const rows = sources
    .map(
      (_, i) =>
        `(select coalesce(json_agg(json_build_array(r.id, r.cols, r.live, r.matches)), '[]') from r${i} r) as r${i}`,
    )
    .join(',\n       ');
  const text = `with ${ctes}
select (select coalesce(json_agg(json_build_array(c.position, c.name, c.subject_entity, c.subject_id, c.row_id, c.age)
                                 order by c.position), '[]') from changes c) as changes,
       (select coalesce(json_agg(json_build_array(k.kind, k.id, k.permissions)), '[]') from callers k) as callers,
       (select t.status = 'active' from tenants t where t.id = app_tenant_id()) as served${rows ? `,\n       ${rows}` : ''}`;
  return { text, params };
}

/** An event the batch read. */
export interface Change {
  position: number;
  name: string;
  subjectEntity: string | null;
  subjectId: string | null;
  rowId: string | null;
  /** Seconds from the event's transaction to the batch's read (PostgreSQL's clock on both ends). */
  age: number;
}

/** A changed row as the batch read it: its columns parsed as pg parses them, and whether it is live. */
export interface ChangedRow {
  values: Record<string, unknown>;
  live: boolean;
  /** Whether it matches each filter the statement evaluated for its source, in their order. */
  matches: readonly boolean[];
  /** The item as the list answers it (afterRead applied), once the batch has presented it. */
  item?: unknown;
}

export interface BatchResult {
  changes: Change[];
  /** Whether the tenant is still served (active): a suspended tenant's host answers no list, so its streams close. */
  served: boolean;
  /** `session:<id>` or `token:<id>` → the permissions the caller holds now; a missing caller is gone. */
  callers: Map<string, ReadonlySet<string>>;
  /** Per source (in the statement's order), the changed rows by id. */
  rows: Map<string, ChangedRow>[];
}

type Json = unknown[];

/** The batch's one row, parsed; `parsers` gives each source's column parsers (columnParsers). */
export function parseBatch(
  row: Record<string, unknown>,
  sources: readonly LiveSource[],
  parsers: ReadonlyMap<string, readonly ((text: string) => unknown)[]>,
): BatchResult {
  const changes = (row.changes as Json[]).map(([position, name, subjectEntity, subjectId, rowId, age]) => ({
    position: Number(position),
    name: name as string,
    subjectEntity: (subjectEntity as string | null) ?? null,
    subjectId: (subjectId as string | null) ?? null,
    rowId: (rowId as string | null) ?? null,
    age: Number(age),
  }));
  const callers = new Map<string, ReadonlySet<string>>();
  for (const [kind, id, permissions] of row.callers as Json[])
    callers.set(`${kind as string}:${id as string}`, new Set(permissions as string[]));
  const rows = sources.map((source, i) => {
    const parse = parsers.get(source.key)!;
    const byId = new Map<string, ChangedRow>();
    for (const [id, cols, live, matches] of row[`r${i}`] as Json[]) {
      const values: Record<string, unknown> = {};
      (cols as (string | null)[]).forEach((text, c) => {
        values[source.columns[c]!] = text === null ? null : parse[c]!(text);
      });
      byId.set(id as string, { values, live: live === true, matches: (matches as unknown[]).map((m) => m === true) });
    }
    return byId;
  });
  return { changes, served: row.served === true, callers, rows };
}

const COLUMN_TYPES = `
select c.relname as "table", a.attname as "column", a.atttypid::int as oid
  from pg_attribute a join pg_class c on c.oid = a.attrelid
 where c.oid = any ($1::regclass[]) and a.attnum > 0 and not a.attisdropped`;

/**
 * Each source's column parsers, from the columns' types: a batch reads a row's columns as text and
 * parses them as pg parses the read route's, so an event's row is the value the read route answers.
 * Asked once, when the web process starts.
 */
export async function columnParsers(
  pool: pg.Pool,
  sources: readonly LiveSource[],
): Promise<Map<string, ((text: string) => unknown)[]>> {
  if (sources.length === 0) return new Map();
  const { rows } = await pool.query<{ table: string; column: string; oid: number }>(COLUMN_TYPES, [
    [...new Set(sources.map((s) => s.table))],
  ]);
  const oids = new Map(rows.map((r) => [`${quote(r.table)}.${r.column}`, r.oid]));
  return new Map(
    sources.map((source) => [
      source.key,
      source.columns.map((column) => {
        const oid = oids.get(`${source.table}.${column}`);
        if (oid === undefined) throw new Error(`live list ${source.key}: ${source.table} has no column ${column}`);
        return pg.types.getTypeParser(oid, 'text') as (text: string) => unknown;
      }),
    ]),
  );
}
