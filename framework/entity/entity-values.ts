// What an entity's rows and values look like to code: stored values, rows, command changes, answers, row filters. (define.ts gathers the author API.)
import type { Static, TObject, TOptional, TProperties, TSchema, TUnsafe } from 'typebox';

/** The stored values of an entity's fields, as TypeBox infers them. */
export type FieldValues<F extends TProperties> = Static<TObject<F>>;

/** The empty field set: the default for an entity without computed fields. */
// biome-ignore lint/complexity/noBannedTypes: `{}` is exactly the empty property map TypeBox's TProperties admits
export type NoFields = {};

/** A stored value as PostgreSQL hands it back: a date-time (DateTime()) column arrives as a Date. */
type StoredValue<S extends TSchema> = S extends { format: 'date-time' } ? Date : Static<S>;

/**
 * A row as handlers, hooks and commands see it: the fields as they are stored (a date-time is a
 * Date, an optional field left empty is null, a field with a column default (WithDefault) never is)
 * plus the system columns. JSON responses still
 * carry ISO strings: the response schemas serialise the Dates.
 */
export type EntityRow<F extends TProperties> = {
  [K in keyof F]: F[K] extends TOptional<TSchema>
    ? F[K] extends { default: unknown }
      ? StoredValue<F[K]>
      : StoredValue<F[K]> | null
    : StoredValue<F[K]>;
} & {
  id: string;
  createdAt: Date;
  updatedAt: Date;
};

/** The row a command runs on: locked; for a singleton, null until the tenant's row exists. */
export type CommandRow<F extends TProperties, S extends boolean = false> = S extends true
  ? EntityRow<F> | null
  : EntityRow<F>;

/** Changes a command returns: a date-time may be given as a Date or an ISO string, an optional field cleared with null. */
export type FieldChanges<F extends TProperties> = {
  [K in keyof F]?:
    | (F[K] extends { format: 'date-time' } ? Date | string : Static<F[K]>)
    | (F[K] extends TOptional<TSchema> ? null : never);
};

/** What a handler may return for a response schema: a date-time property may be a Date (serialised as an ISO string). */
export type Answer<S extends TSchema> =
  S extends TObject<infer P>
    ? Static<
        TObject<{
          [K in keyof P]: P[K] extends { format: 'date-time' }
            ? P[K] extends TOptional<TSchema>
              ? TOptional<TUnsafe<string | Date>>
              : TUnsafe<string | Date>
            : P[K];
        }>
      >
    : Static<S>;

/** A row-access filter: field → the value a visible row holds (equality; a null value matches no row). */
export type RowFilter<F extends TProperties> = { readonly [K in keyof F & string]?: Static<F[K]> | null };
