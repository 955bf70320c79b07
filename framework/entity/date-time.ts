import Type, { type TSchema, type TString, type TStringOptions } from 'typebox';

/**
 * Marks a schema made by DateTime(). TypeBox does not carry a string's format in its type, so a
 * `Type.String({ format: 'date-time' })` field cannot be told apart from any other string when
 * typing rows; the boot checks use this mark to refuse such a field (its rows would be typed as
 * strings while PostgreSQL hands back Date objects).
 */
export const DATE_TIME = Symbol.for('tenantry.date-time');

/** A date-time field: an ISO 8601 string in requests and responses, a Date in a row read from PostgreSQL. */
export interface TDateTime extends TString {
  format: 'date-time';
}

/** Declares a date-time field (a `timestamptz` column). */
export function DateTime(options: Omit<TStringOptions, 'format'> = {}): TDateTime {
  const schema = Type.String({ ...options, format: 'date-time' }) as TDateTime;
  // Enumerable so it survives Type.Optional's copy; a symbol, so it never reaches OpenAPI or JSON.
  (schema as unknown as Record<symbol, boolean>)[DATE_TIME] = true;
  return schema;
}

/** True for a date-time string schema however it was declared. */
export const hasDateTimeFormat = (schema: TSchema): boolean => (schema as { format?: unknown }).format === 'date-time';

/** True for a schema made by DateTime(). */
export const isDeclaredDateTime = (schema: TSchema): boolean =>
  (schema as unknown as Record<symbol, unknown>)[DATE_TIME] === true;
