import type { TSchema } from 'typebox';
import { columnType, enumValues, stripOptional } from '../schema/column-types.ts';

/**
 * What the query language knows of a field: its kind (which decides the operators it takes and how
 * a value is read), the SQL type a value is sent as, whether its column may hold null and, for an
 * enum, its values in declared order. Worked out once per field at boot from the field's schema.
 */

export type FieldKind = 'text' | 'uuid' | 'integer' | 'number' | 'boolean' | 'dateTime' | 'date' | 'enum' | 'list';

export const OPERATORS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'is', 'contains', 'startsWith'] as const;
export type Operator = (typeof OPERATORS)[number];

export interface FieldType {
  readonly kind: FieldKind;
  /** The SQL type a value of this field is sent as (`$1::timestamptz`); for a list, its element's. */
  readonly sqlType: string;
  /** The column may hold null: `is.null` applies, and a sort puts those rows last. */
  readonly nullable: boolean;
  /** An enum's values in declared order (a list of an enum: its element's). */
  readonly values?: readonly string[];
  /** A list's element kind. */
  readonly element?: Exclude<FieldKind, 'list'>;
}

const SQL_TYPES: Record<Exclude<FieldKind, 'list'>, string> = {
  text: 'text',
  uuid: 'uuid',
  integer: 'bigint',
  number: 'double precision',
  boolean: 'boolean',
  dateTime: 'timestamptz',
  date: 'date',
  enum: 'text',
};

/** A scalar's kind from the column type its schema calls for (framework/schema/column-types.ts). */
function scalarKind(
  schema: TSchema,
  catalog: string,
): { kind: Exclude<FieldKind, 'list'>; values?: string[] } | undefined {
  const values = enumValues(schema);
  if (values?.every((v) => typeof v === 'string')) return { kind: 'enum', values: values as string[] };
  switch (catalog) {
    case 'text':
      return { kind: 'text' };
    case 'uuid':
      return { kind: 'uuid' };
    case 'timestamptz':
      return { kind: 'dateTime' };
    case 'date':
      return { kind: 'date' };
    case 'int4':
    case 'int8':
      return { kind: 'integer' };
    case 'float8':
      return { kind: 'number' };
    case 'bool':
      return { kind: 'boolean' };
    default:
      return undefined;
  }
}

/**
 * The query type of a field with this schema, or undefined for one the language cannot compare
 * (an object, a list of objects: a JSON column). `nullable` says whether its column may hold null.
 */
export function fieldTypeOf(schema: TSchema, nullable: boolean): FieldType | undefined {
  let column: string;
  try {
    column = columnType(schema).catalog;
  } catch {
    return undefined;
  }
  const bare = stripOptional(schema) as TSchema & { type?: unknown; items?: TSchema };
  if (column.endsWith('[]')) {
    const item = bare.items ? scalarKind(bare.items, column.slice(0, -2)) : undefined;
    if (!item) return undefined;
    return {
      kind: 'list',
      sqlType: `${SQL_TYPES[item.kind]}[]`,
      nullable,
      element: item.kind,
      ...(item.values ? { values: item.values } : {}),
    };
  }
  const scalar = scalarKind(bare, column);
  if (!scalar) return undefined;
  return {
    kind: scalar.kind,
    sqlType: SQL_TYPES[scalar.kind],
    nullable,
    ...(scalar.values ? { values: scalar.values } : {}),
  };
}

/**
 * The operators a field of this type takes: eq and neq on every scalar; gt, gte, lt and lte on
 * numbers, date-times, dates and enums; in on every scalar but a boolean; is on a boolean
 * (true, false) and on a field that may be empty (null); contains and startsWith on text; a
 * list takes contains (it holds the element) and is.
 */
export function operatorsOf(type: FieldType): Operator[] {
  const is: Operator[] = type.kind === 'boolean' || type.nullable ? ['is'] : [];
  switch (type.kind) {
    case 'text':
      return ['eq', 'neq', 'in', ...is, 'contains', 'startsWith'];
    case 'uuid':
      return ['eq', 'neq', 'in', ...is];
    case 'boolean':
      return ['eq', 'neq', ...is];
    case 'list':
      return ['contains', ...is];
    default:
      return ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', ...is];
  }
}

/** The words `is.` takes on a field of this type. */
export function isValuesOf(type: FieldType): string[] {
  return [...(type.kind === 'boolean' ? ['true', 'false'] : []), ...(type.nullable ? ['null'] : [])];
}
