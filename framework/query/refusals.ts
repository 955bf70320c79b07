import type { TSchema } from 'typebox';

/**
 * What a refused request parameter's message says, when the schema's own words would not tell a
 * caller what to send: a schema carries the sentence (a list's filter parameter names the
 * operators it takes), and validation (validation.ts) says it for any failure of that parameter.
 * Kept under symbols, so they reach neither the OpenAPI document nor a JSON copy.
 */

const REFUSAL = Symbol.for('tenantry.refusal');
const UNKNOWN_REFUSAL = Symbol.for('tenantry.unknown-refusal');

type Marked = Record<symbol, string | undefined>;

/** The same schema, whose every failure answers `message` (what the parameter accepts). */
export function withRefusal<T extends TSchema>(schema: T, message: string): T {
  (schema as unknown as Marked)[REFUSAL] = message;
  return schema;
}

/** The same object schema, whose refusal of an unknown property adds `sentence` (what it takes). */
export function withUnknownRefusal<T extends TSchema>(schema: T, sentence: string): T {
  (schema as unknown as Marked)[UNKNOWN_REFUSAL] = sentence;
  return schema;
}

export interface Refusals {
  /** Property → the message of any failure of its value. */
  readonly properties: ReadonlyMap<string, string>;
  /** What an unknown property's refusal adds. */
  readonly unknown: string | undefined;
}

/** The refusal messages an object schema's own properties carry (none: undefined). */
export function refusalsOf(schema: TSchema): Refusals | undefined {
  const unknown = (schema as unknown as Marked)[UNKNOWN_REFUSAL];
  const properties = new Map<string, string>();
  for (const [name, property] of Object.entries(
    (schema as { properties?: Record<string, TSchema> }).properties ?? {},
  )) {
    const message = (property as unknown as Marked)[REFUSAL];
    if (message) properties.set(name, message);
  }
  return unknown !== undefined || properties.size > 0 ? { properties, unknown } : undefined;
}
