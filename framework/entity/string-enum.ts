import Type, { type TEnum, type TSchemaOptions } from 'typebox';

/**
 * A value that is one of a few strings (a status, a priority, a sort key). Published as one
 * `{ "type": "string", "enum": [...] }`, which clients turn into a union of string literals, and
 * refused with a message naming the allowed values ("must be one of: low, medium, high, critical",
 * http/problems.ts). Use it rather than a union of literals, which publishes as `anyOf` single
 * values and is refused once per value (test/framework/enum-refusals.test.ts walks the document).
 */
export function StringEnum<const V extends string[]>(values: readonly [...V], options: TSchemaOptions = {}): TEnum<V> {
  return Type.Enum(values, { ...options, type: 'string' });
}
