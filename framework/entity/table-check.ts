import type pg from 'pg';
import Type, { type TSchema } from 'typebox';
import type { AnyEntity } from './define.ts';
import type { TxContext } from '../context/tx.ts';
import { snakeCase } from './names.ts';
import type { ModuleRegistry as Registry } from '../contracts/services.ts';
import { clearable, type ResolvedEntity } from './resolve.ts';
import { BootCheckError } from './boot-check-error.ts';
import { IDENTITY_TABLES, type IdentityTable } from '../access/identity-tables.ts';
import { GLOBAL_TABLES } from '../schema/distribution.ts';

/** Created by migrations/framework/0005 (`call watch_public_read(<table>)`). */
const PUBLIC_READ_TRIGGER_FUNCTION = 'tenantry_public_read_changed';

/** A column as the catalog describes it; arrays are named `<element>[]`, domains by their base type. */
export interface ColumnInfo {
  type: string;
  notNull: boolean;
  hasDefault: boolean;
  defaultExpr: string | null;
}

/** An index as the catalog has it: its key columns or expressions in order, and its predicate. */
export interface IndexInfo {
  name: string;
  unique: boolean;
  keys: readonly string[];
  where: string | null;
}

export interface TableInfo {
  name: string;
  /** Its indexes (left out: none is known, as for a table described by hand). */
  indexes?: readonly IndexInfo[];
  rowSecurity: boolean;
  forcedRowSecurity: boolean;
  policies: number;
  /** The functions the table's (user) triggers run. */
  triggerFunctions: readonly string[];
  columns: ReadonlyMap<string, ColumnInfo>;
}

// One statement for every table at once, after the migrations ran.
const CATALOG = `
select c.relname as table_name,
       c.relrowsecurity as row_security,
       c.relforcerowsecurity as forced_row_security,
       (select count(*) from pg_policy p where p.polrelid = c.oid)::int as policies,
       array(select f.proname::text from pg_trigger g join pg_proc f on f.oid = g.tgfoid
              where g.tgrelid = c.oid and not g.tgisinternal) as trigger_functions,
       a.attname as column_name,
       case when t.typcategory = 'A' then e.typname || '[]' else t.typname end as type,
       a.attnotnull as not_null,
       (d.adbin is not null or a.attidentity <> '' or a.attgenerated <> '') as has_default,
       pg_get_expr(d.adbin, d.adrelid) as default_expr
  from pg_class c
  join pg_namespace n on n.oid = c.relnamespace and n.nspname = current_schema()
  join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
  join pg_type declared on declared.oid = a.atttypid
  join pg_type t on t.oid = case when declared.typtype = 'd' then declared.typbasetype else declared.oid end
  left join pg_type e on e.oid = t.typelem and t.typcategory = 'A'
  left join pg_attrdef d on d.adrelid = c.oid and d.adnum = a.attnum
 where c.relkind in ('r', 'p') and c.relname = any ($1::text[])`;

/** Every index of the tables: keys as pg_get_indexdef writes them (a column's name, or an expression). */
export const INDEXES = `
select t.relname as table_name, i.relname as name, x.indisunique as unique, x.indisprimary as primary,
       array(select pg_get_indexdef(x.indexrelid, k, true) from generate_series(1, x.indnkeyatts) k order by k) as keys,
       pg_get_expr(x.indpred, x.indrelid, true) as predicate
  from pg_index x
  join pg_class i on i.oid = x.indexrelid
  join pg_class t on t.oid = x.indrelid
  join pg_namespace n on n.oid = t.relnamespace and n.nspname = current_schema()
 where t.relname = any ($1::text[])
 order by t.relname, i.relname`;

export interface IndexRow {
  table_name: string;
  name: string;
  unique: boolean;
  primary: boolean;
  keys: string[];
  predicate: string | null;
}

interface CatalogRow {
  table_name: string;
  row_security: boolean;
  forced_row_security: boolean;
  policies: number;
  trigger_functions: string[];
  column_name: string;
  type: string;
  not_null: boolean;
  has_default: boolean;
  default_expr: string | null;
}

export async function loadTables(pool: pg.Pool, names: readonly string[]): Promise<Map<string, TableInfo>> {
  const wanted = [...new Set(names)];
  const [{ rows }, indexes] = await Promise.all([
    pool.query<CatalogRow>(CATALOG, [wanted]),
    pool.query<IndexRow>(INDEXES, [wanted]),
  ]);
  const tables = new Map<string, TableInfo & { columns: Map<string, ColumnInfo> }>();
  for (const row of rows) {
    let table = tables.get(row.table_name);
    if (!table) {
      table = {
        name: row.table_name,
        rowSecurity: row.row_security,
        forcedRowSecurity: row.forced_row_security,
        policies: row.policies,
        triggerFunctions: row.trigger_functions,
        indexes: indexes.rows
          .filter((i) => i.table_name === row.table_name)
          .map((i) => ({ name: i.name, unique: i.unique, keys: i.keys, where: i.predicate })),
        columns: new Map(),
      };
      tables.set(row.table_name, table);
    }
    table.columns.set(row.column_name, {
      type: row.type,
      notNull: row.not_null,
      hasDefault: row.has_default,
      defaultExpr: row.default_expr,
    });
  }
  return tables;
}

/**
 * The table shape an entity's options call for. Global scope (no tenant_id, no row-level
 * security) and hard delete (no deleted_at) are read through an untyped view, so this check
 * honours them as soon as the definition carries them, whatever else changes around it.
 */
export function tableShape(def: AnyEntity): { tenantScoped: boolean; softDelete: boolean } {
  return { tenantScoped: def.scope !== 'global', softDelete: def.storage?.deleteMode !== 'hard' };
}

/**
 * The fields a row-access filter names (memo: ownerId), found by asking it with a context that
 * answers anything: every list filters by them, so they lead the list indexes after tenant_id.
 */
export function rowAccessFields(def: AnyEntity): string[] {
  if (!def.rowAccess) return [];
  const anything: unknown = new Proxy(() => {}, {
    get: (_target, key) => (key === Symbol.toPrimitive ? () => 'x' : anything),
    apply: () => anything,
  });
  try {
    return Object.keys(def.rowAccess(anything as TxContext)).filter((field) => field in def.fields);
  } catch {
    return [];
  }
}

/**
 * The indexes an entity declares beyond its sorts' (EntityDefinition.indexes), each as its fields
 * in key order; one that equals a sort's index (a single sortable field) is that index already.
 */
export function declaredIndexes(def: AnyEntity): string[][] {
  const sorts = new Set(['createdAt', 'updatedAt', ...(def.sortable ?? [])]);
  const seen = new Set<string>();
  const out: string[][] = [];
  for (const index of def.indexes ?? []) {
    const fields = [...index] as string[];
    const key = fields.join(',');
    if (fields.length === 0 || seen.has(key) || (fields.length === 1 && sorts.has(fields[0]!))) continue;
    seen.add(key);
    out.push(fields);
  }
  return out;
}

/** Which column types can hold a field's values, and whether its schema admits null. */
interface Accepted {
  /** undefined: any type (an unconstrained schema). */
  types: ReadonlySet<string> | undefined;
  nullable: boolean;
}

const STRING_TYPES = ['text', 'varchar', 'bpchar', 'citext', 'uuid'];
const INTEGER_TYPES = ['int2', 'int4', 'int8'];
const NUMBER_TYPES = ['numeric', 'float4', 'float8'];
const JSON_TYPES = ['jsonb', 'json'];

type JsonSchema = TSchema & {
  type?: string | string[];
  format?: string;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
};

function scalarTypes(schema: JsonSchema): string[] | undefined {
  const kinds = schema.anyOf ?? schema.oneOf;
  if (kinds) {
    const members = kinds.filter((k) => k.type !== 'null').map(scalarTypes);
    if (members.length === 0 || members.some((m) => m === undefined)) return undefined;
    return [...new Set(members.flat() as string[])];
  }
  const values = schema.enum ?? ('const' in schema ? [schema.const] : undefined);
  if (values && schema.type === undefined) {
    return [...new Set(values.flatMap((v) => valueTypes(v)))];
  }
  switch (schema.type) {
    case 'string':
      if (schema.format === 'date-time') return ['timestamptz'];
      if (schema.format === 'date') return ['date'];
      return STRING_TYPES;
    case 'integer':
      return INTEGER_TYPES;
    case 'number':
      return values?.every((v) => Number.isInteger(v)) ? [...INTEGER_TYPES, ...NUMBER_TYPES] : NUMBER_TYPES;
    case 'boolean':
      return ['bool'];
    case 'object':
      return JSON_TYPES;
    case 'array': {
      // Arrays of scalars are PostgreSQL arrays (text[]); arrays of objects are stored as JSON.
      const items = schema.items ? scalarTypes(schema.items) : undefined;
      if (!items) return undefined;
      if (items.every((t) => JSON_TYPES.includes(t))) return JSON_TYPES;
      return items.map((t) => `${t}[]`);
    }
    default:
      return undefined;
  }
}

function valueTypes(value: unknown): string[] {
  if (value === null) return [];
  if (typeof value === 'string') return STRING_TYPES;
  if (typeof value === 'boolean') return ['bool'];
  if (typeof value === 'number') return Number.isInteger(value) ? [...INTEGER_TYPES, ...NUMBER_TYPES] : NUMBER_TYPES;
  return JSON_TYPES;
}

function admitsNull(schema: JsonSchema): boolean {
  if (schema.type === 'null' || (Array.isArray(schema.type) && schema.type.includes('null'))) return true;
  if (schema.const === null || schema.enum?.includes(null)) return true;
  return (schema.anyOf ?? schema.oneOf ?? []).some(admitsNull);
}

export function acceptedColumn(schema: TSchema): Accepted {
  const types = scalarTypes(schema as JsonSchema);
  return { types: types ? new Set(types) : undefined, nullable: admitsNull(schema as JsonSchema) };
}

const list = (types: Iterable<string>): string => {
  const all = [...types];
  return all.length > 1 ? `${all.slice(0, -1).join(', ')} or ${all.at(-1)}` : (all[0] ?? '');
};

/**
 * What disagrees between an entity's definition and its table, one line per problem naming
 * the entity, the field and the column. Empty when they agree.
 */
export function entityTableProblems(entity: ResolvedEntity, table: TableInfo | undefined): string[] {
  const { def, names } = entity;
  const where = `entity ${names.key}`;
  if (!table) return [`${where}: table ${names.table} does not exist (no migration creates it)`];
  const problems: string[] = [];
  const column = (name: string) => table.columns.get(name);
  const expectSystem = (name: string, type: string, opts: { notNull: boolean; needsDefault: boolean }) => {
    const found = column(name);
    if (!found)
      return problems.push(
        `${where}: table ${table.name} has no column ${name} (${type}), which every such table needs`,
      );
    if (found.type !== type) problems.push(`${where}: column ${table.name}.${name} is ${found.type}, expected ${type}`);
    if (opts.notNull && !found.notNull)
      problems.push(`${where}: column ${table.name}.${name} allows null, expected not null`);
    if (opts.needsDefault && !found.hasDefault)
      problems.push(`${where}: column ${table.name}.${name} has no default; the framework never sets it on insert`);
    return undefined;
  };

  const shape = tableShape(def);
  expectSystem('id', 'uuid', { notNull: true, needsDefault: true });
  expectSystem('created_at', 'timestamptz', { notNull: true, needsDefault: true });
  expectSystem('updated_at', 'timestamptz', { notNull: true, needsDefault: true });
  if (def.publicRead && !table.triggerFunctions.includes(PUBLIC_READ_TRIGGER_FUNCTION)) {
    problems.push(
      `${where}: table ${table.name} has no trigger evicting the public read's cached ETags; its migration must call watch_public_read('${table.name}')`,
    );
  }
  if (shape.softDelete) {
    expectSystem('deleted_at', 'timestamptz', { notNull: false, needsDefault: false });
    if (column('deleted_at')?.notNull)
      problems.push(`${where}: column ${table.name}.deleted_at is not null; a live row has none`);
  }

  if (shape.tenantScoped) {
    const tenantId = column('tenant_id');
    if (!tenantId) {
      problems.push(
        `${where}: table ${table.name} has no tenant_id column; a tenant-scoped entity needs tenant_id uuid not null default app_tenant_id()`,
      );
    } else {
      if (tenantId.type !== 'uuid' || !tenantId.notNull)
        problems.push(
          `${where}: column ${table.name}.tenant_id is ${tenantId.type}${tenantId.notNull ? '' : ' allowing null'}, expected uuid not null`,
        );
      if (tenantId.defaultExpr !== 'app_tenant_id()') {
        problems.push(
          `${where}: column ${table.name}.tenant_id defaults to ${tenantId.defaultExpr ?? 'nothing'}, expected app_tenant_id()`,
        );
      }
    }
    if (!table.rowSecurity || !table.forcedRowSecurity || table.policies === 0) {
      problems.push(
        `${where}: table ${table.name} is not isolated by tenant (row-level security enabled, forced, with a policy); call make_tenant_table('${table.name}') in its migration`,
      );
    }
  } else {
    if (column('tenant_id'))
      problems.push(`${where}: the entity is global but table ${table.name} has a tenant_id column`);
    if (table.rowSecurity)
      problems.push(
        `${where}: the entity is global but table ${table.name} has row-level security, which would hide rows from other tenants`,
      );
  }

  // A declared index: one whose keys are the declared fields' columns, after tenant_id and the
  // row-access fields as the generator writes them (any name, any predicate: it serves the same).
  const lead = [...(shape.tenantScoped ? ['tenant_id'] : []), ...rowAccessFields(def).map(snakeCase)];
  for (const fields of declaredIndexes(def)) {
    const columns = [...lead, ...fields.map(snakeCase)];
    const served = (table.indexes ?? []).some((index) => columns.every((c, i) => index.keys[i] === c));
    if (!served)
      problems.push(
        `${where}: indexes declares (${fields.join(', ')}), but table ${table.name} has no index on (${columns.join(', ')}, ...); npm run migration:new writes it`,
      );
  }

  for (const field of entity.fields) {
    const name = entity.columns[field]!;
    const schema = def.fields[field]!;
    const found = column(name);
    if (!found) {
      problems.push(`${where}: field ${field} has no column ${table.name}.${name}`);
      continue;
    }
    const accepted = acceptedColumn(schema);
    if (accepted.types && !accepted.types.has(found.type)) {
      problems.push(
        `${where}: field ${field} is ${describe(schema)}, but column ${table.name}.${name} is ${found.type} (expected ${list(accepted.types)})`,
      );
    }
    const optional = Type.IsOptional(schema);
    if (!optional && !accepted.nullable && !found.notNull) {
      problems.push(`${where}: field ${field} is required, but column ${table.name}.${name} allows null`);
    }
    // An optional field left out of a create takes the column's default; without one, null.
    if (optional && found.notNull && !found.hasDefault) {
      problems.push(
        `${where}: field ${field} is optional, but column ${table.name}.${name} is not null and has no default, so a create leaving it out fails`,
      );
    } else if (found.notNull && entity.patchable.includes(field) && clearable(schema)) {
      // PATCH clears such a field with null (resolve.ts): its column must take null.
      problems.push(
        `${where}: field ${field} is optional with no declared default, so PATCH may clear it with null, but column ${table.name}.${name} is not null; declare its default with WithDefault() or let the column allow null`,
      );
    }
  }
  return problems;
}

function describe(schema: TSchema): string {
  const s = schema as JsonSchema;
  if (s.type === 'string' && s.format) return `a ${s.format} string`;
  if (s.type === 'array') return typeof s.items?.type === 'string' ? `an array of ${s.items.type}s` : 'an array';
  if (typeof s.type === 'string') return `${/^[aeiou]/.test(s.type) ? 'an' : 'a'} ${s.type}`;
  if (s.anyOf || s.enum) return 'a choice of values';
  return 'a value';
}

/** What disagrees between the framework's identity table as the framework uses it and the table in the database. */
export function identityTableProblems(use: IdentityTable, table: TableInfo | undefined): string[] {
  const where = `the framework's identity table ${use.table} (migrations/framework/0013_identity.sql; ${use.usedFor})`;
  if (!table) return [`${where} does not exist`];
  const problems: string[] = [];
  for (const [name, type] of Object.entries(use.columns)) {
    const found = table.columns.get(name);
    if (!found) problems.push(`${where}: column ${use.table}.${name} (${type}) is missing`);
    else if (found.type !== type)
      problems.push(`${where}: column ${use.table}.${name} is ${found.type}, expected ${type}`);
  }
  if (!table.rowSecurity || !table.forcedRowSecurity || table.policies === 0) {
    problems.push(`${where} is not isolated by tenant: call make_tenant_table('${use.table}') in a migration`);
  }
  return problems;
}

// Tables made by hand (no entity describes them) carrying tenant_id: tenantry_app gets every new
// table's rows by the schema's default privileges, so only row-level security with a policy keeps
// them per tenant. Not forcing it is a table's choice (auth_attempts: its owner's sweep reads every
// tenant's rows); tenantry_app owns no table, so the policy holds for it either way.
const UNISOLATED = `
select c.relname as name
  from pg_class c join pg_namespace n on n.oid = c.relnamespace and n.nspname = current_schema()
 where c.relkind in ('r', 'p') and not c.relispartition
   and exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'tenant_id' and not a.attisdropped)
   and not (c.relrowsecurity and exists (select 1 from pg_policy p where p.polrelid = c.oid))
 order by 1`;

/** The tenant tables (a tenant_id column) not isolated by tenant, but for the global ones listed as such. */
async function unisolatedTenantTables(pool: pg.Pool): Promise<string[]> {
  const { rows } = await pool.query<{ name: string }>(UNISOLATED);
  return rows.map((r) => r.name).filter((name) => !(name in GLOBAL_TABLES));
}

/**
 * The boot check that definitions and tables agree: every entity against its table, and the
 * framework's identity tables, which it reads on every request, against what it uses of them.
 * Runs once, after the migrations, in every role; refuses to start on any mismatch, naming each.
 */
export async function checkTables(
  pool: pg.Pool,
  registry: Registry,
): Promise<{ entities: string[]; tables: string[] }> {
  const described = [...registry.entities.map((e) => e.names.table), ...IDENTITY_TABLES.map((u) => u.table)];
  const tables = await loadTables(pool, described);
  const checked = new Set(described);
  const problems = [
    ...IDENTITY_TABLES.flatMap((use) => identityTableProblems(use, tables.get(use.table))),
    ...registry.entities.flatMap((entity) => entityTableProblems(entity, tables.get(entity.names.table))),
    ...(await unisolatedTenantTables(pool))
      .filter((name) => !checked.has(name))
      .map(
        (name) =>
          `table ${name} carries tenant_id but is not isolated by tenant (row-level security enabled, with a policy); call make_tenant_table('${name}') in its migration`,
      ),
  ];
  if (problems.length > 0)
    throw new BootCheckError(`startup checks failed: definitions and tables disagree:\n- ${problems.join('\n- ')}`);
  return { entities: registry.entities.map((e) => e.names.key), tables: [...tables.keys()].sort() };
}
