import Type, { type TProperties, type TSchema } from 'typebox';
import { named, nameOf } from '../openapi/schema-name.ts';
import type { TxContext } from '../context/tx.ts';
import type { ResolvedEntity } from '../entity/resolve.ts';
import { columnMayHoldNull } from '../schema/column-types.ts';
import { hasDateTimeFormat } from '../entity/date-time.ts';
import { SECRET } from '../entity/secret-field.ts';
import {
  queryField,
  type QueryField,
  type QueryModel,
  type QueryReference,
  type ReferencedRow,
  type ReferenceTarget,
} from '../query/query-model.ts';
import { quote } from './entity-sql.ts';

/**
 * An entity's query model (framework/query/query-model.ts): what its lists filter, sort, select
 * and expand, from its definition. Filterable: every field, id, createdAt and updatedAt, or the
 * ones `filterable` names; never a secret one, nor one holding JSON. Sortable: every filterable
 * field and every declared sort. Selectable: every field and computed field but a secret one.
 * References: each declared reference to an entity of the registry, under the field's name
 * without its `Id` suffix or the name `referenceNames` gives.
 */

const SYSTEM_SCHEMAS: Readonly<Record<string, { schema: TSchema; column: string }>> = {
  id: { schema: Type.String({ format: 'uuid' }), column: 'id' },
  createdAt: { schema: Type.String({ format: 'date-time' }), column: 'created_at' },
  updatedAt: { schema: Type.String({ format: 'date-time' }), column: 'updated_at' },
};

/** The column a queryable name reads: a system column or a field's. */
function columnOf(entity: ResolvedEntity, name: string): string | undefined {
  return SYSTEM_SCHEMAS[name]?.column ?? entity.columns[name];
}

/**
 * The query field of a name of the entity. Its column is unqualified: the list's own conditions
 * stand in its statement's WHERE, and a filter through a reference compares the referenced
 * table's inside a subquery on that table, where its own columns come first.
 */
function fieldOf(entity: ResolvedEntity, name: string): QueryField | undefined {
  const system = SYSTEM_SCHEMAS[name];
  const schema = system?.schema ?? entity.def.fields[name];
  const column = columnOf(entity, name);
  if (!schema || column === undefined) return undefined;
  return queryField(name, {
    schema,
    nullable: !system && columnMayHoldNull(schema),
    column: quote(column),
    // createdAt and updatedAt lead the list indexes, as every declared sort does (framework/schema/desired.ts).
    indexed: entity.sortable.includes(name),
  });
}

/** The fields and computed fields whose schema marks them secret (Secret(), `x-secret`): never queried. */
export function secretNames(entity: ResolvedEntity): Set<string> {
  const marked = (schema: TSchema | undefined) => (schema as Record<string, unknown> | undefined)?.[SECRET] === true;
  return new Set(
    [...Object.entries(entity.def.fields), ...Object.entries(entity.def.computed ?? {})]
      .filter(([, schema]) => marked(schema))
      .map(([name]) => name),
  );
}

/** The names a query may filter by: `filterable`, or every field and the system fields; never a secret one. */
export function filterableNames(entity: ResolvedEntity): string[] {
  const secret = secretNames(entity);
  const declared = entity.def.filterable ?? ['id', 'createdAt', 'updatedAt', ...entity.fields];
  return declared.filter((name) => !secret.has(name));
}

/** The entity's own filterable fields, and the declared sorts they leave out, by name. */
export function entityQueryFields(entity: ResolvedEntity): {
  fields: Map<string, QueryField>;
  sorts: Map<string, QueryField>;
} {
  const fields = new Map<string, QueryField>();
  for (const name of filterableNames(entity)) {
    const field = fieldOf(entity, name);
    if (field) fields.set(name, field);
  }
  const sorts = new Map<string, QueryField>();
  const secret = secretNames(entity);
  for (const name of entity.sortable) {
    if (fields.has(name) || secret.has(name)) continue;
    const field = fieldOf(entity, name);
    if (field) sorts.set(name, field);
  }
  return { fields, sorts };
}

/** The names `fields=` may select: the timestamps, every field and computed field but a secret one. */
export function selectableNames(entity: ResolvedEntity): Set<string> {
  const secret = secretNames(entity);
  return new Set(['createdAt', 'updatedAt', ...entity.fields, ...entity.computed].filter((n) => !secret.has(n)));
}

/**
 * The name a reference field goes by in queries: the one `referenceNames` gives, else the field's
 * name without its `Id` suffix; undefined for a field with no such suffix and no declared name.
 */
export function referenceName(entity: ResolvedEntity, field: string): string | undefined {
  const declared = entity.def.referenceNames?.[field];
  if (declared) return declared;
  return field.length > 2 && field.endsWith('Id') ? field.slice(0, -2) : undefined;
}

/** What a reference target needs of the referenced entity's operations. */
export interface TargetSource {
  readonly entity: ResolvedEntity;
  readonly table: string;
  readonly live: string;
  /** Its own query model (the target's fields a query reaches through the reference). */
  readonly model: QueryModel;
  /** Its rows need neither the caller nor code after the statement (its read may be one statement). */
  readonly readsInStatement: boolean;
  /** The row its read answers, as the OpenAPI document shows it. */
  readonly row: TSchema;
  toRow(values: Record<string, unknown>): Record<string, unknown>;
  accessFor(ctx: TxContext, first: number): { sql: string; params: unknown[] };
  readMany(ctx: TxContext, ids: readonly string[]): Promise<Record<string, unknown>[]>;
}

/** The referenced entity as a query reaches it (ReferenceTarget), from its operations. */
export function referenceTarget(source: TargetSource): ReferenceTarget {
  const { entity } = source;
  const columns = ['id', 'created_at', 'updated_at', ...entity.fields.map((f) => entity.columns[f]!)];
  // Date-times travel in the JSON value as text; the row has them as Dates, as a read's row does.
  const dates = new Set([
    'created_at',
    'updated_at',
    ...entity.fields.filter((f) => hasDateTimeFormat(entity.def.fields[f]!)).map((f) => entity.columns[f]!),
  ]);
  const afterRead = entity.def.hooks?.afterRead;
  return {
    key: entity.names.key,
    row: source.row,
    permission: entity.def.permissions.read,
    table: source.table,
    live: source.live,
    fields: source.model.fields,
    selectable: source.model.selectable,
    inStatement: source.readsInStatement,
    json: `json_build_array(${columns.map((c) => `x.${quote(c)}`).join(', ')})`,
    fromJson(value: unknown): ReferencedRow {
      const list = value as unknown[];
      const values: Record<string, unknown> = {};
      columns.forEach((column, i) => {
        const v = list[i];
        values[column] = dates.has(column) && typeof v === 'string' ? new Date(v) : v;
      });
      return source.toRow(values);
    },
    access: (ctx, first) => source.accessFor(ctx, first),
    async readMany(ctx, ids) {
      const rows = await source.readMany(ctx, ids);
      if (!afterRead) return rows;
      const shaped: ReferencedRow[] = [];
      for (const row of rows) shaped.push((await afterRead(ctx, row as never)) as ReferencedRow);
      return shaped;
    },
  };
}

/**
 * The references of the entity a query may filter through and expand, to the entities `targetOf`
 * finds (by key); a reference to an entity it does not know stays a plain id.
 */
export function entityReferences(
  entity: ResolvedEntity,
  table: string,
  targetOf: (key: string) => ReferenceTarget | undefined,
): Map<string, QueryReference> {
  const out = new Map<string, QueryReference>();
  const secret = secretNames(entity);
  for (const [field, key] of Object.entries(entity.def.admin?.references ?? {})) {
    const name = key ? referenceName(entity, field) : undefined;
    const target = key ? targetOf(key) : undefined;
    if (!name || !target || secret.has(field) || !(field in entity.columns)) continue;
    out.set(name, { name, field, column: `${table}.${quote(entity.columns[field]!)}`, target });
  }
  return out;
}

/**
 * The row schema with each reference's expansion as an optional property: the referenced row as
 * its read answers it, or null. Present only when the query asks for it (expand=, or fields=
 * naming it).
 */
export function rowWithExpansions(row: TSchema, references: Iterable<QueryReference>): TSchema {
  const base = row as TSchema & { properties: TProperties; title?: string };
  const properties: TProperties = { ...base.properties };
  for (const reference of references) {
    properties[reference.name] = Type.Optional(
      Type.Union([reference.target.row, Type.Null()], {
        description: `With expand=${reference.name} (or fields naming it): the ${reference.target.key} its ${reference.field} names, as its read answers it for the caller; null when there is none the caller may read.`,
      }),
    );
  }
  const name = nameOf(row);
  const expanded = Type.Object(properties, {
    additionalProperties: false,
    ...(base.title !== undefined ? { title: base.title } : {}),
  });
  return name ? named(expanded, name) : expanded;
}
