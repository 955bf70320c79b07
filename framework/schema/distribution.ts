import type pg from 'pg';

/**
 * Whether the installation's schema can be distributed by tenant_id (Citus's multi-tenant model,
 * docs/operations.md "Past one PostgreSQL"), read from PostgreSQL's catalog, and the plan that
 * would distribute it. Nothing here needs Citus: the rules are the ones its documentation states
 * for a table distributed by a column (every primary and unique key carries it, foreign keys
 * between distributed tables carry it, a distributed table names a reference table but never a
 * table left on the coordinator) and for row-level security (policies without subqueries).
 */

/** Where a table that is not the tenants' own goes. */
export type GlobalPlacement = 'reference' | 'coordinator';

export interface GlobalTable {
  placement: GlobalPlacement;
  /** Why it is global, and why there. */
  why: string;
}

/**
 * Every global table of the installation, listed by hand: a table that carries no tenant_id and is
 * not here fails the check, so a new global table is placed knowingly. A reference table is copied
 * to every node (tenant tables may name its rows); a coordinator table stays on one node (written
 * by one process at a time, or read only there).
 */
export const GLOBAL_TABLES: Readonly<Record<string, GlobalTable>> = {
  tenants: { placement: 'reference', why: 'every request resolves its tenant; small, read everywhere' },
  tenant_hosts: { placement: 'reference', why: 'host to tenant, read before any tenant is known; names tenants' },
  plans: { placement: 'reference', why: "the operator's price list; subscriptions and charges name a plan" },
  outbox: {
    placement: 'coordinator',
    why: 'one queue of every tenant, drained in order by the relay (a global sequence and LISTEN/NOTIFY)',
  },
  migration_history: { placement: 'coordinator', why: 'what the migration runner applied, under its advisory lock' },
  installation_secret: { placement: 'coordinator', why: "the installation's one secret, read at boot" },
  dead_letters: {
    placement: 'coordinator',
    why: "the worker's spent jobs of every tenant, the operator's view (tenant_id may be null)",
  },
  billing_sandbox_charges: {
    placement: 'coordinator',
    why: "the sandbox payment provider's own ledger, standing in for the provider's records (no tenant policy)",
  },
};

/** Schemas whose every table is global: pg-boss's queue, created by the worker at its start. */
export const GLOBAL_SCHEMAS: Readonly<Record<string, GlobalTable>> = {
  pgboss: { placement: 'coordinator', why: "pg-boss's queue, locked with SKIP LOCKED and its own LISTEN" },
};

/** The tenant setting the policies compare tenant_id with, and the function that reads it. */
const TENANT_SETTING = 'app.tenant_id';
const TENANT_FUNCTION = 'app_tenant_id';

/** A policy comparing tenant_id with the setting, as pg_policies prints it. */
const TENANT_COMPARISONS = [
  `(tenant_id = ${TENANT_FUNCTION}())`,
  `(tenant_id = (nullif(current_setting('${TENANT_SETTING}'::text, true), ''::text))::uuid)`,
  `(tenant_id = (current_setting('${TENANT_SETTING}'::text, true))::uuid)`,
  `(tenant_id = (current_setting('${TENANT_SETTING}'::text))::uuid)`,
];

/**
 * The framework's cross-tenant read (allow_cross_tenant_read, framework/0004): a SELECT policy for
 * the role tenantry_cross_tenant alone, `true`, without a subquery. It compares no tenant_id by
 * design (a security-definer function asks across tenants); on a distributed table it is a read
 * of every shard. Its one shape is accepted; any other policy must compare tenant_id.
 */
const CROSS_TENANT_READ = { name: 'cross_tenant_read', role: 'tenantry_cross_tenant', cmd: 'SELECT', qual: 'true' };

interface TableRow {
  schema: string;
  name: string;
  tenant_column: boolean;
  row_security: boolean;
}
interface KeyRow {
  table: string;
  name: string;
  kind: string;
  columns: string[];
  definition: string;
}
interface ForeignKeyRow {
  table: string;
  name: string;
  columns: string[];
  ref_table: string;
  ref_columns: string[];
}
interface PolicyRow {
  table: string;
  name: string;
  roles: string[];
  cmd: string;
  qual: string | null;
  with_check: string | null;
}

export interface Catalog {
  database: string;
  /** `schema.table` outside public, `table` in public. */
  tables: readonly TableRow[];
  keys: readonly KeyRow[];
  foreignKeys: readonly ForeignKeyRow[];
  policies: readonly PolicyRow[];
  /** The tenant function's body, or null when it does not exist. */
  tenantFunction: string | null;
}

const TABLES = `
select n.nspname as schema,
       case when n.nspname = 'public' then c.relname else n.nspname || '.' || c.relname end as name,
       exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'tenant_id' and not a.attisdropped) as tenant_column,
       c.relrowsecurity as row_security
  from pg_class c join pg_namespace n on n.oid = c.relnamespace
 where c.relkind in ('r', 'p') and not c.relispartition
   and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg\\_%'
 order by 2`;

/** Primary keys, unique constraints, exclusion constraints and unique indexes: each with its key columns. */
const KEYS = `
select x.indrelid::regclass::text as table, i.relname as name,
       coalesce(c.contype::text, 'i') as kind,
       array(select a.attname::text from unnest(x.indkey) k join pg_attribute a on a.attrelid = x.indrelid and a.attnum = k) as columns,
       pg_get_indexdef(x.indexrelid) as definition
  from pg_index x
  join pg_class i on i.oid = x.indexrelid
  join pg_namespace n on n.oid = i.relnamespace
  left join pg_constraint c on c.conindid = x.indexrelid and c.conrelid = x.indrelid and c.contype in ('p', 'u', 'x')
 where (x.indisunique or c.contype = 'x')
   and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg\\_%'
 order by 1, 2`;

const FOREIGN_KEYS = `
select c.conrelid::regclass::text as table, c.conname as name,
       array(select a.attname::text from unnest(c.conkey) with ordinality k(attnum, n)
               join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.attnum order by k.n) as columns,
       c.confrelid::regclass::text as ref_table,
       array(select a.attname::text from unnest(c.confkey) with ordinality k(attnum, n)
               join pg_attribute a on a.attrelid = c.confrelid and a.attnum = k.attnum order by k.n) as ref_columns
  from pg_constraint c join pg_namespace n on n.oid = c.connamespace
 where c.contype = 'f' and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg\\_%'
 order by 1, 2`;

const POLICIES = `
select case when schemaname = 'public' then tablename::text else schemaname || '.' || tablename end as table,
       policyname::text as name, roles::text[] as roles, cmd, qual, with_check
  from pg_policies order by 1, 2`;

const TENANT_FUNCTION_BODY = `select prosrc from pg_proc where proname = $1 and pronamespace = 'public'::regnamespace`;

/** The catalog as the rules read it: tables, keys, foreign keys, policies and the tenant function. */
export async function readCatalog(db: pg.Pool | pg.ClientBase): Promise<Catalog> {
  const database = (await db.query<{ name: string }>('select current_database() as name')).rows[0]!.name;
  const tables = (await db.query<TableRow>(TABLES)).rows;
  const keys = (await db.query<KeyRow>(KEYS)).rows;
  const foreignKeys = (await db.query<ForeignKeyRow>(FOREIGN_KEYS)).rows;
  const policies = (await db.query<PolicyRow>(POLICIES)).rows;
  const body = (await db.query<{ prosrc: string }>(TENANT_FUNCTION_BODY, [TENANT_FUNCTION])).rows[0];
  return { database, tables, keys, foreignKeys, policies, tenantFunction: body?.prosrc ?? null };
}

/** Where each table of the catalog goes: listed global ones as listed, the rest by tenant_id. */
export function placementOf(table: TableRow): GlobalPlacement | 'distributed' | undefined {
  const listed = GLOBAL_TABLES[table.name] ?? GLOBAL_SCHEMAS[table.schema];
  if (listed) return listed.placement;
  return table.tenant_column ? 'distributed' : undefined;
}

const hasSubquery = (expression: string | null) => expression !== null && /\b(select|exists)\b/i.test(expression);

function policyProblems(policy: PolicyRow): string[] {
  const where = `policy ${policy.name} on ${policy.table}`;
  const problems: string[] = [];
  if (hasSubquery(policy.qual) || hasSubquery(policy.with_check))
    problems.push(`${where} contains a subquery: ${policy.qual ?? ''} ${policy.with_check ?? ''}`.trim());
  const crossTenantRead =
    policy.name === CROSS_TENANT_READ.name &&
    policy.roles.length === 1 &&
    policy.roles[0] === CROSS_TENANT_READ.role &&
    policy.cmd === CROSS_TENANT_READ.cmd &&
    policy.qual === CROSS_TENANT_READ.qual &&
    policy.with_check === null;
  if (crossTenantRead) return problems;
  for (const [part, expression] of [
    ['using', policy.qual],
    ['with check', policy.with_check],
  ] as const) {
    if (expression !== null && !TENANT_COMPARISONS.includes(expression))
      problems.push(`${where} (${part}) does not compare tenant_id with the ${TENANT_SETTING} setting: ${expression}`);
  }
  if (policy.qual === null && policy.with_check === null)
    problems.push(`${where} does not compare tenant_id with the ${TENANT_SETTING} setting`);
  return problems;
}

/**
 * Every place the catalog breaks the rules, one sentence each (empty when the schema can be
 * distributed): a table neither listed global nor carrying tenant_id; on a tenant table, a primary
 * key or unique key or index without tenant_id, no row-level security, a policy that does not
 * compare tenant_id with the setting or holds a subquery; a foreign key between tenant tables
 * without tenant_id on both sides at the same place, or from a tenant table to a coordinator table,
 * or from a global table to a tenant table; the tenant function reading anything but the setting.
 */
export function distributionProblems(catalog: Catalog): string[] {
  const problems: string[] = [];
  const placement = new Map(catalog.tables.map((t) => [t.name, placementOf(t)]));
  for (const table of catalog.tables) {
    const where = placement.get(table.name);
    if (where === undefined)
      problems.push(
        `table ${table.name} has no tenant_id and is not listed as a reference or coordinator table (GLOBAL_TABLES)`,
      );
    if (where !== 'distributed') continue;
    if (!table.row_security) problems.push(`table ${table.name} carries tenant_id but has no row-level security`);
    if (!catalog.keys.some((k) => k.table === table.name && k.kind === 'p'))
      problems.push(`table ${table.name} has no primary key`);
  }
  for (const name of Object.keys(GLOBAL_TABLES))
    if (!placement.has(name)) problems.push(`GLOBAL_TABLES lists ${name}, which the database does not have`);

  for (const key of catalog.keys) {
    if (placement.get(key.table) !== 'distributed' || key.columns.includes('tenant_id')) continue;
    const what = { p: 'primary key', u: 'unique constraint', x: 'exclusion constraint', i: 'unique index' }[key.kind];
    problems.push(`${what ?? 'key'} ${key.name} on ${key.table} lacks tenant_id: ${key.definition}`);
  }

  for (const fk of catalog.foreignKeys) {
    const from = placement.get(fk.table);
    const to = placement.get(fk.ref_table);
    const named = `foreign key ${fk.name} on ${fk.table} (${fk.columns.join(', ')}) → ${fk.ref_table} (${fk.ref_columns.join(', ')})`;
    if (from === 'distributed' && to === 'distributed') {
      const at = fk.columns.indexOf('tenant_id');
      if (at < 0 || fk.ref_columns[at] !== 'tenant_id') problems.push(`${named} does not carry tenant_id`);
    } else if (from === 'distributed' && to === 'coordinator') {
      problems.push(`${named} names a coordinator table from a tenant table`);
    } else if (from !== 'distributed' && to === 'distributed') {
      problems.push(`${named} names a tenant table from a global one`);
    } else if (from === 'reference' && to === 'coordinator') {
      problems.push(`${named} names a coordinator table from a reference table`);
    }
  }

  for (const policy of catalog.policies) {
    if (placement.get(policy.table) !== 'distributed') continue;
    problems.push(...policyProblems(policy));
  }

  const body = catalog.tenantFunction;
  if (body === null) problems.push(`function ${TENANT_FUNCTION}() is missing`);
  else if (!body.includes(`current_setting('${TENANT_SETTING}'`) || /\bfrom\b/i.test(body))
    problems.push(`function ${TENANT_FUNCTION}() reads more than the ${TENANT_SETTING} setting: ${body.trim()}`);
  return problems;
}

/** Tables in an order where every table comes after the tables it names (ties by name). */
function dependencyOrder(names: readonly string[], foreignKeys: readonly ForeignKeyRow[]): string[] {
  const among = new Set(names);
  const needs = new Map(names.map((n) => [n, new Set<string>()]));
  for (const fk of foreignKeys)
    if (among.has(fk.table) && among.has(fk.ref_table) && fk.table !== fk.ref_table)
      needs.get(fk.table)!.add(fk.ref_table);
  const order: string[] = [];
  const placed = new Set<string>();
  while (order.length < names.length) {
    const ready = [...names].sort().find((n) => !placed.has(n) && [...needs.get(n)!].every((d) => placed.has(d)));
    // A cycle of foreign keys: the rest in name order (Citus takes a cycle only within one call; none here).
    const next = ready ?? [...names].sort().find((n) => !placed.has(n))!;
    order.push(next);
    placed.add(next);
  }
  return order;
}

const quote = (value: string) => `'${value.replaceAll("'", "''")}'`;
const identifier = (value: string) => `"${value.replaceAll('"', '""')}"`;

export interface DistributionPlan {
  settings: string[];
  reference: string[];
  distributed: string[];
  coordinator: { table: string; why: string }[];
}

/**
 * What distributing the catalog's tables takes, in the order to run it: the settings, the
 * reference tables (in dependency order), then the tenant tables by tenant_id, colocated with the
 * first (in dependency order: a table after every table it names). Coordinator tables stay as
 * they are. The catalog must pass distributionProblems first.
 */
export function distributionPlan(catalog: Catalog): DistributionPlan {
  const by = (where: string) => catalog.tables.filter((t) => placementOf(t) === where).map((t) => t.name);
  const reference = dependencyOrder(by('reference'), catalog.foreignKeys);
  const distributed = dependencyOrder(by('distributed'), catalog.foreignKeys);
  const anchor = distributed[0];
  return {
    settings: [
      // The tenant setting is transaction-local (set_config(..., true) in the opening statement):
      // the setting that carries transaction-local settings to the nodes running the query.
      `alter database ${identifier(catalog.database)} set citus.propagate_set_commands = 'local';`,
    ],
    reference: reference.map((t) => `select create_reference_table(${quote(t)});`),
    distributed: distributed.map((t) =>
      t === anchor
        ? `select create_distributed_table(${quote(t)}, 'tenant_id');`
        : `select create_distributed_table(${quote(t)}, 'tenant_id', colocate_with => ${quote(anchor!)});`,
    ),
    coordinator: [
      ...catalog.tables
        .filter((t) => placementOf(t) === 'coordinator' && !GLOBAL_SCHEMAS[t.schema])
        .map((t) => ({ table: t.name, why: GLOBAL_TABLES[t.name]!.why })),
      // A schema as one line: pg-boss's, made by the worker at its first start.
      ...Object.entries(GLOBAL_SCHEMAS).map(([schema, { why }]) => ({ table: `${schema}.*`, why })),
    ],
  };
}

/** The plan as `npm run citus:plan` prints it: SQL to run on the coordinator, with comments. */
export function renderDistributionPlan(plan: DistributionPlan): string {
  return [
    '-- Distributing this installation with Citus (docs/operations.md, "Past one PostgreSQL").',
    '-- Run on the coordinator, after `create extension citus` and the workers are added. Not run here.',
    '',
    '-- Settings',
    ...plan.settings,
    '',
    '-- Reference tables: a copy on every node, in dependency order',
    ...plan.reference,
    '',
    '-- Tenant tables, distributed by tenant_id and colocated, in dependency order',
    ...plan.distributed,
    '',
    '-- Coordinator tables: left on the coordinator as they are',
    ...plan.coordinator.map((c) => `--   ${c.table}: ${c.why}`),
    '',
  ].join('\n');
}
