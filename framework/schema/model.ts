import type { ColumnType } from './column-types.ts';

/** A column the definition calls for. */
export interface ColumnSpec {
  name: string;
  /** The field it stores; absent for the system columns and the storage's extra columns. */
  field?: string;
  type: ColumnType;
  notNull: boolean;
  /** A constant default (a field's WithDefault): its value, and the SQL literal written. */
  default?: { value: unknown; sql: string };
  /** The default of a system column, as SQL: `gen_random_uuid()`, `app_tenant_id()`, `now()`. */
  defaultExpr?: string;
  primaryKey?: boolean;
  /** The values an enum CHECK admits. */
  enumValues?: readonly (string | number)[];
  /** An extra column (storage.columns): its definition as written, taken as it stands. */
  verbatim?: string;
  /** The catalog types the boot check accepts for the field (any of them needs no change). */
  accepted?: ReadonlySet<string>;
}

/** An index the definition calls for, compared with the catalog's by its keys and predicate. */
export interface IndexSpec {
  name: string;
  unique: boolean;
  /** Key columns or expressions, in order: `tenant_id`, `lower(email)`. */
  keys: readonly string[];
  /** The partial index's predicate (`deleted_at is null`), or none. */
  where?: string;
  /** Why it exists, for the migration's comment. */
  purpose: 'unique' | 'singleton' | 'list' | 'declared';
  /** The field it is unique on, or the list sorts by. */
  field?: string;
  /** A declared index's fields, in key order (EntityDefinition.indexes). */
  fields?: readonly string[];
}

/** A foreign key the definition's references call for (framework/entity/references.ts). */
export interface ForeignKeySpec {
  name: string;
  /** The field it carries, for the migration's comment. */
  field: string;
  /** `[tenant_id, owner_id]` for a tenant-owned target, `[plan_id]` for a global one. */
  columns: readonly string[];
  table: string;
  /** `[tenant_id, id]` or `[id]`. */
  refColumns: readonly string[];
}

/** The table an entity's definition calls for. */
export interface TableSpec {
  /** The entity's key, e.g. `testkit.widget`. */
  entity: string;
  table: string;
  tenantScoped: boolean;
  softDelete: boolean;
  columns: readonly ColumnSpec[];
  indexes: readonly IndexSpec[];
  /** The sorts the list indexes serve, in order (for the comment). */
  sorts: readonly string[];
  /** A public read: the table needs watch_public_read's trigger. */
  publicRead: boolean;
  /** `[tenant_id, id]` for a tenant-owned table (a table constraint), `[id]` for a global one (on the column). */
  primaryKey: readonly string[];
  foreignKeys: readonly ForeignKeySpec[];
  /** Another table names its rows by `(tenant_id, id)`: the unique constraint of that name, or none. */
  tenantRowKey?: string;
}

/** A column as the catalog has it. */
export interface ActualColumn {
  type: string;
  notNull: boolean;
  /** The default's expression (pg_get_expr), or null. */
  defaultExpr: string | null;
  /** A constant default's value, evaluated; absent when there is none or it calls a function. */
  defaultValue?: { value: unknown };
}

export interface ActualIndex {
  name: string;
  unique: boolean;
  /** The primary key's index. */
  primary?: boolean;
  keys: readonly string[];
  where: string | null;
}

export interface ActualCheck {
  name: string;
  columns: readonly string[];
  definition: string;
}

export interface ActualForeignKey {
  name: string;
  columns: readonly string[];
  table: string;
  /** The referenced columns, in order. */
  refColumns: readonly string[];
}

/** A table as the catalog has it, after the existing migrations. */
export interface ActualTable {
  name: string;
  columns: ReadonlyMap<string, ActualColumn>;
  indexes: readonly ActualIndex[];
  checks: readonly ActualCheck[];
  foreignKeys: readonly ActualForeignKey[];
  rowSecurity: boolean;
  policies: number;
  triggerFunctions: readonly string[];
}
