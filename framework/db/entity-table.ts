import type { ColumnType, Generated } from 'kysely';
import type { Static, TProperties, TSchema } from 'typebox';

/**
 * The kysely table type of an entity, derived from its field schemas: what modules declare in
 * framework/db/types.ts's Database (by declaration merging) instead of writing the interface out:
 *
 *   declare module '../../framework/contracts/database.ts' {
 *     interface Database { tasks: EntityTable<typeof taskFields> }
 *   }
 *
 * Each field becomes its snake_case column (names.ts's snakeCase, at the type level) typed as
 * TypeBox infers it: a DateTime() a Date (a string is accepted when writing), an Optional field
 * nullable, a field with a WithDefault() column default Generated (an insert may leave it out).
 * The system columns come with it: id, created_at and updated_at, tenant_id unless the entity is
 * global, deleted_at unless its deletes are hard. A table's extra columns (storage.columns) are
 * added by intersection: `EntityTable<typeof userFields> & { password_hash: string | null }`.
 */
export type EntityTable<F extends TProperties, O extends TableShape = TenantOwnedSoftDelete> = Flatten<
  SystemColumns<O> & { [K in keyof F & string as SnakeCase<K>]: FieldColumn<F[K]> }
>;

/** The entity's scope and delete mode, as its definition says (the defaults: tenant-owned, soft delete). */
export interface TableShape {
  scope?: 'tenant' | 'global';
  deleteMode?: 'soft' | 'hard';
}

export interface TenantOwnedSoftDelete {
  scope: 'tenant';
  deleteMode: 'soft';
}

/** A timestamptz column: read as a Date, written as a Date or an ISO string. */
type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

type IsDateTime<S> = S extends { format: 'date-time' } ? true : false;
type HasDefault<S> = S extends { default: unknown } ? true : false;
type IsOptional<S> = S extends { '~optional': true } ? true : false;

/** A field's column: a default makes it Generated; Optional (without a default) makes it nullable. */
type FieldColumn<S extends TSchema> =
  HasDefault<S> extends true
    ? IsDateTime<S> extends true
      ? ColumnType<Date, Date | string | undefined, Date | string>
      : Generated<Static<S>>
    : IsOptional<S> extends true
      ? IsDateTime<S> extends true
        ? NullableTimestamp
        : Static<S> | null
      : IsDateTime<S> extends true
        ? Timestamp
        : Static<S>;

type SystemColumns<O extends TableShape> = {
  id: Generated<string>;
  created_at: Generated<Date>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
} & (O extends { scope: 'global' } ? unknown : { tenant_id: Generated<string> }) &
  (O extends { deleteMode: 'hard' } ? unknown : { deleted_at: NullableTimestamp });

type Flatten<T> = { [K in keyof T]: T[K] };

type IsUpper<C extends string> = C extends Lowercase<C> ? false : true;
type IsLowerOrDigit<C extends string> = C extends Uppercase<C> ? (C extends `${number}` ? true : false) : true;

/**
 * names.ts's snakeCase as a type: an underscore before each capital that follows a lower-case
 * letter or a digit, a hyphen as an underscore, everything lower-cased (`approvedAt` → `approved_at`).
 */
export type SnakeCase<S extends string, Previous extends string = ''> = S extends `${infer C}${infer Rest}`
  ? `${IsUpper<C> extends true ? (Previous extends '' ? Lowercase<C> : IsLowerOrDigit<Previous> extends true ? `_${Lowercase<C>}` : Lowercase<C>) : C extends '-' ? '_' : C}${SnakeCase<Rest, C>}`
  : '';
