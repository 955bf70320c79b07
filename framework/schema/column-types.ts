import Type, { type TSchema } from 'typebox';
import { acceptedColumn } from '../entity/table-check.ts';
import { declaredDefault } from '../entity/storage.ts';

/** A column type both as DDL writes it and as the catalog names it (framework/entity/table-check.ts). */
export interface ColumnType {
  /** As a create table writes it: `text`, `integer`, `timestamptz`, `text[]`. */
  sql: string;
  /** As pg_type names it (arrays as `<element>[]`): `text`, `int4`, `timestamptz`, `text[]`. */
  catalog: string;
}

const TYPES = {
  text: { sql: 'text', catalog: 'text' },
  uuid: { sql: 'uuid', catalog: 'uuid' },
  timestamptz: { sql: 'timestamptz', catalog: 'timestamptz' },
  date: { sql: 'date', catalog: 'date' },
  integer: { sql: 'integer', catalog: 'int4' },
  bigint: { sql: 'bigint', catalog: 'int8' },
  double: { sql: 'double precision', catalog: 'float8' },
  boolean: { sql: 'boolean', catalog: 'bool' },
  jsonb: { sql: 'jsonb', catalog: 'jsonb' },
} as const satisfies Record<string, ColumnType>;

const INT4_MIN = -2147483648;
const INT4_MAX = 2147483647;

type JsonSchema = TSchema & {
  type?: string | string[];
  format?: string;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
};

const isNullSchema = (s: JsonSchema) => s.type === 'null' || s.const === null;

/** The values of a union of literals (or an enum, or one literal), null left out; undefined for anything else. */
export function enumValues(schema: TSchema): (string | number)[] | undefined {
  const s = schema as JsonSchema;
  const members = s.anyOf ?? s.oneOf;
  if (members) {
    const values = members.filter((m) => !isNullSchema(m)).map((m) => enumValues(m));
    if (values.length === 0 || values.some((v) => v === undefined)) return undefined;
    return [...new Set(values.flat() as (string | number)[])];
  }
  const listed = s.enum ?? ('const' in s ? [s.const] : undefined);
  if (!listed) return undefined;
  const values = listed.filter((v) => v !== null);
  return values.every((v) => typeof v === 'string' || typeof v === 'number') && values.length > 0
    ? (values as (string | number)[])
    : undefined;
}

function integerType(s: JsonSchema): ColumnType {
  const low = s.minimum ?? s.exclusiveMinimum;
  const high = s.maximum ?? s.exclusiveMaximum;
  return (low !== undefined && low < INT4_MIN) || (high !== undefined && high > INT4_MAX)
    ? TYPES.bigint
    : TYPES.integer;
}

function scalarType(s: JsonSchema): ColumnType | undefined {
  const values = enumValues(s);
  if (values) {
    if (values.every((v) => typeof v === 'string')) return TYPES.text;
    if (values.every((v) => Number.isInteger(v)))
      return values.every((v) => (v as number) >= INT4_MIN && (v as number) <= INT4_MAX) ? TYPES.integer : TYPES.bigint;
    return TYPES.double;
  }
  const members = (s.anyOf ?? s.oneOf)?.filter((m) => !isNullSchema(m));
  if (members) {
    // A union of one kind (a nullable string, say) is that kind; of several, a JSON value.
    const kinds = members.map((m) => scalarType(m));
    const first = kinds[0];
    return first && kinds.every((k) => k?.catalog === first.catalog) ? first : undefined;
  }
  const type = Array.isArray(s.type) ? s.type.filter((t) => t !== 'null') : [s.type];
  if (type.length !== 1) return undefined;
  switch (type[0]) {
    case 'string':
      if (s.format === 'uuid') return TYPES.uuid;
      if (s.format === 'date-time') return TYPES.timestamptz;
      if (s.format === 'date') return TYPES.date;
      return TYPES.text;
    case 'integer':
      return integerType(s);
    case 'number':
      return TYPES.double;
    case 'boolean':
      return TYPES.boolean;
    default:
      return undefined;
  }
}

/**
 * The column type a field's schema calls for: a string is text (a uuid, date-time or date format
 * its own type), an integer integer (bigint past int4's range), a number double precision, a
 * boolean boolean, an array of scalars an array of them (text[]), and anything else (objects,
 * arrays of objects, mixed unions) jsonb. Always one of the types the boot check accepts.
 */
export function columnType(schema: TSchema): ColumnType {
  const s = stripOptional(schema) as JsonSchema;
  let chosen: ColumnType = TYPES.jsonb;
  if (s.type === 'array' && s.items) {
    const item = scalarType(s.items);
    if (item) chosen = { sql: `${item.sql}[]`, catalog: `${item.catalog}[]` };
  } else {
    chosen = scalarType(s) ?? TYPES.jsonb;
  }
  const accepted = acceptedColumn(schema).types;
  if (accepted && !accepted.has(chosen.catalog)) {
    throw new Error(
      `no column type derives from this schema (the boot check accepts ${[...accepted].join(', ')}, the generator chose ${chosen.catalog})`,
    );
  }
  return chosen;
}

/**
 * Whether the column of a field declared with this schema may hold null: an optional field
 * without a default other than null, or one whose schema admits null. The migration generator
 * (framework/schema/desired.ts) writes `not null` for every other field.
 */
export function columnMayHoldNull(schema: TSchema): boolean {
  if (acceptedColumn(schema).nullable) return true;
  if (!Type.IsOptional(schema)) return false;
  const found = declaredDefault(schema) ?? declaredDefault(stripOptional(schema));
  return found === undefined || found.value === null;
}

export function stripOptional(schema: TSchema): TSchema {
  return Type.IsOptional(schema) ? (Type.Required(Type.Object({ v: schema })).properties as { v: TSchema }).v : schema;
}

/** A value written as a SQL literal of the column's type: the text of a `default` or a `check`. */
export function sqlLiteral(value: unknown, type: ColumnType): string {
  if (value === null) return 'null';
  if (type.catalog.endsWith('[]')) {
    if (!Array.isArray(value))
      throw new Error(`an array column's default must be an array, not ${JSON.stringify(value)}`);
    return quote(`{${value.map((v) => arrayElement(v)).join(',')}}`);
  }
  if (type.catalog === 'jsonb') return quote(JSON.stringify(value));
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : quote(String(value));
  if (value instanceof Date) return quote(value.toISOString());
  return quote(String(value));
}

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

function arrayElement(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null) return 'NULL';
  return `"${String(value).replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}
