import type { Static, TProperties, TSchema } from 'typebox';

type FieldName<F extends TProperties> = keyof F & string;

/**
 * A unique field: unique by its value, or (lowerCase) compared case-insensitively, as addresses
 * are; `message` is the sentence a 409 ALREADY_EXISTS says when a write meets the key (default:
 * "A <entity> with this <field> already exists"). The key, its field and its words are declared
 * here once: the index, the refusal and the test over the migrated keys all read this.
 */
export type UniqueField<F extends TProperties> =
  | FieldName<F>
  | { readonly field: FieldName<F>; readonly lowerCase?: boolean; readonly message?: string };

/** Soft (the default): DELETE sets deleted_at and keeps the row. Hard: DELETE removes the row. */
export type DeleteMode = 'soft' | 'hard';

/**
 * An entity's storage part: its table, and what the table holds besides what its fields and
 * options already say: the facts the migration generator (framework/schema/) needs and no field
 * schema can carry. Everything else (the columns, their types and nullability, enum checks, the
 * system columns, the tenant policy, the list indexes, the one-per-tenant index of a singleton) is
 * derived from the definition itself.
 */
export interface EntityStorage<F extends TProperties> {
  /** The table's name; default the plural in snake_case. */
  table?: string;
  /** 'soft' (default) or 'hard': a hard delete removes the row, and the table needs no deleted_at. */
  deleteMode?: DeleteMode;
  /**
   * Fields unique among live rows (per tenant for a tenant-owned entity): a unique index
   * `<table>_<column>_unique`, partial on `deleted_at is null` where deletes are soft. A field named
   * in uniqueCodes is unique already, under the index name given there.
   */
  unique?: readonly UniqueField<F>[];
  /**
   * Columns the table has besides the fields, written and read only by the module's own queries
   * (e.g. users.password_hash, which no response may carry): column → its SQL type and modifiers,
   * as in a create table (`text`, `integer not null default 0`). Created with the table, never dropped.
   */
  columns?: Readonly<Record<string, string>>;
}

/** A schema carrying its column default, so the derived query type knows an insert may leave it out. */
export type TWithDefault<S extends TSchema> = S & { default: Static<S> };

/**
 * A field whose column has a default: what the database stores when an insert leaves the field
 * out (a command-owned field that starts empty, `status` starting as 'draft'). The value is also the
 * schema's JSON Schema `default`, so OpenAPI shows it. An Optional field with a default is a NOT NULL
 * column: left out, it takes the default instead of null.
 */
export function WithDefault<S extends TSchema>(schema: S, value: Static<S>): TWithDefault<S> {
  // A copy with every own property (TypeBox's markers, DateTime's mark) and the default added.
  const copy = Object.create(Object.getPrototypeOf(schema), Object.getOwnPropertyDescriptors(schema)) as Record<
    string,
    unknown
  >;
  copy.default = value;
  return copy as unknown as TWithDefault<S>;
}

/** The column default a field's schema declares, if any. */
export function declaredDefault(schema: TSchema): { value: unknown } | undefined {
  return Object.hasOwn(schema, 'default') ? { value: (schema as { default: unknown }).default } : undefined;
}
