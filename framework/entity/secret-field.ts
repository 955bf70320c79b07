import type { TSchema } from 'typebox';

/**
 * The vendor keyword marking a response field as a secret shown once (a signing secret, a raw
 * token): the answer that made it carries it, nothing else does. The idempotency recorder
 * (framework/http/idempotency.ts) stores such an answer with the field set to null, so a replay
 * never shows the secret again; the OpenAPI document shows the mark as `x-secret: true`.
 */
export const SECRET = 'x-secret';

/** The schema (a copy, TypeBox's own markers kept) marked as a secret shown once. */
export function Secret<T extends TSchema>(schema: T): T {
  const copy = Object.create(Object.getPrototypeOf(schema), Object.getOwnPropertyDescriptors(schema)) as Record<
    string,
    unknown
  >;
  copy[SECRET] = true;
  return copy as unknown as T;
}

/** Whether a field's schema is marked Secret(). */
export const isSecret = (schema: TSchema | undefined): boolean =>
  (schema as Record<string, unknown> | undefined)?.[SECRET] === true;
