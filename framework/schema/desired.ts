import type { TProperties } from 'typebox';
import type { AnyEntity } from '../entity/define.ts';
import { resolveEntity } from '../entity/resolve.ts';
import { snakeCase } from '../entity/names.ts';
import { acceptedColumn, declaredIndexes, rowAccessFields, tableShape } from '../entity/table-check.ts';
import { declaredDefault, type UniqueField } from '../entity/storage.ts';
import { columnMayHoldNull, columnType, enumValues, sqlLiteral, stripOptional } from './column-types.ts';
import { referencedWithinTenant, referenceKeys, tenantRowKeyName } from '../entity/references.ts';
import type { ColumnSpec, ForeignKeySpec, IndexSpec, TableSpec } from './model.ts';

export const LIVE_ROWS = 'deleted_at is null';

export { declaredIndexes, rowAccessFields };

function fieldColumn(def: AnyEntity, field: string): ColumnSpec {
  const schema = def.fields[field]!;
  const name = snakeCase(field);
  let type: ColumnSpec['type'];
  try {
    type = columnType(schema);
  } catch (err) {
    throw new Error(`entity ${def.module}.${def.name}, field ${field}: ${(err as Error).message}`);
  }
  const found = declaredDefault(schema) ?? declaredDefault(stripOptional(schema));
  const accepted = acceptedColumn(schema);
  const values =
    type.catalog === 'text' || type.catalog === 'int4' || type.catalog === 'int8'
      ? enumValues(stripOptional(schema))
      : undefined;
  return {
    name,
    field,
    type,
    // Left out of a create, an optional field is null, unless its column has a default.
    notNull: !columnMayHoldNull(schema),
    ...(found !== undefined && found.value !== null
      ? { default: { value: found.value, sql: sqlLiteral(found.value, type) } }
      : {}),
    ...(values ? { enumValues: values } : {}),
    ...(accepted.types ? { accepted: accepted.types } : {}),
  };
}

function uniqueKey(entry: UniqueField<TProperties>): { field: string; lowerCase: boolean } {
  return typeof entry === 'string'
    ? { field: entry, lowerCase: false }
    : { field: entry.field, lowerCase: entry.lowerCase === true };
}

/**
 * The table an entity's definition calls for: its columns (id, tenant_id, the fields, the storage's
 * extra columns, created_at, updated_at, deleted_at), the unique indexes, a singleton's one row
 * per tenant, one list index per sort and one per declared index, each led by tenant_id and the row-access fields and
 * ended by id, partial on live rows where deletes are soft. Its references' foreign keys name their
 * targets among `entities` (the installation's): composite `(tenant_id, column) → (tenant_id, id)`
 * between tenant-owned tables, and a table another names so has its `(tenant_id, id)` unique key.
 * A tenant-owned table's primary key is `(tenant_id, id)`, a global one's `(id)`.
 */
export function desiredTable(def: AnyEntity, entities: readonly AnyEntity[] = [def]): TableSpec {
  const resolved = resolveEntity(def);
  const { table } = resolved.names;
  const shape = tableShape(def);
  const columns: ColumnSpec[] = [
    {
      name: 'id',
      type: { sql: 'uuid', catalog: 'uuid' },
      notNull: true,
      defaultExpr: 'gen_random_uuid()',
      // A tenant table's key carries tenant_id (primaryKey on the table): a key of id alone
      // could not be enforced were the table distributed by tenant (docs/operations.md).
      ...(shape.tenantScoped ? {} : { primaryKey: true }),
    },
  ];
  if (shape.tenantScoped)
    columns.push({
      name: 'tenant_id',
      type: { sql: 'uuid', catalog: 'uuid' },
      notNull: true,
      defaultExpr: 'app_tenant_id()',
    });
  for (const field of resolved.fields) columns.push(fieldColumn(def, field));
  for (const [name, definition] of Object.entries(def.storage?.columns ?? {})) {
    columns.push({
      name,
      type: { sql: definition, catalog: '' },
      notNull: /\bnot null\b/i.test(definition),
      verbatim: definition,
    });
  }
  const timestamp = { sql: 'timestamptz', catalog: 'timestamptz' };
  columns.push({ name: 'created_at', type: timestamp, notNull: true, defaultExpr: 'now()' });
  columns.push({ name: 'updated_at', type: timestamp, notNull: true, defaultExpr: 'now()' });
  if (shape.softDelete) columns.push({ name: 'deleted_at', type: timestamp, notNull: false });

  const where = shape.softDelete ? { where: LIVE_ROWS } : {};
  const lead = shape.tenantScoped ? ['tenant_id'] : [];
  const indexes: IndexSpec[] = [];
  const uniques = [
    ...Object.entries(def.uniqueCodes ?? {}).map(([field, rule]) => ({ field, lowerCase: false, name: rule!.index })),
    ...(def.storage?.unique ?? []).map((entry) => ({ ...uniqueKey(entry), name: undefined })),
  ];
  const seen = new Set<string>();
  for (const { field, lowerCase, name } of uniques) {
    if (seen.has(field)) continue;
    seen.add(field);
    const column = snakeCase(field);
    const keys = [...lead, lowerCase ? `lower(${column})` : column];
    indexes.push({ name: name ?? `${table}_${column}_unique`, unique: true, keys, ...where, purpose: 'unique', field });
  }
  if (resolved.singleton && shape.tenantScoped) {
    indexes.push({
      name: `${table}_one_per_tenant`,
      unique: true,
      keys: ['tenant_id'],
      ...where,
      purpose: 'singleton',
    });
  }
  const sorts = resolved.singleton ? [] : resolved.sortable;
  const prefix = rowAccessFields(def).map(snakeCase);
  for (const sort of sorts) {
    const column = snakeCase(sort);
    const name =
      sort === 'createdAt' ? `${table}_list` : sort === 'updatedAt' ? `${table}_by_updated` : `${table}_by_${column}`;
    indexes.push({
      name,
      unique: false,
      keys: [...lead, ...prefix, column, 'id'],
      ...where,
      purpose: 'list',
      field: sort,
    });
  }
  for (const fields of declaredIndexes(def)) {
    const columns = fields.map(snakeCase);
    indexes.push({
      name: `${table}_by_${columns.join('_')}`,
      unique: false,
      keys: [...lead, ...prefix, ...columns, 'id'],
      ...where,
      purpose: 'declared',
      fields,
    });
  }
  const foreignKeys: ForeignKeySpec[] = referenceKeys(def, entities).map((key) => ({
    name: key.name,
    field: key.field,
    columns: key.composite ? ['tenant_id', key.column] : [key.column],
    table: key.targetTable,
    refColumns: key.composite ? ['tenant_id', 'id'] : ['id'],
  }));
  return {
    entity: resolved.names.key,
    table,
    tenantScoped: shape.tenantScoped,
    softDelete: shape.softDelete,
    columns,
    indexes,
    sorts,
    publicRead: def.publicRead !== undefined,
    primaryKey: shape.tenantScoped ? ['tenant_id', 'id'] : ['id'],
    foreignKeys,
    ...(referencedWithinTenant(def, entities) ? { tenantRowKey: tenantRowKeyName(table) } : {}),
  };
}
