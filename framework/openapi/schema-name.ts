import type { TSchema } from 'typebox';

/**
 * The vendor keyword that names a schema for the OpenAPI document. The document builder
 * (named-schemas.ts) moves every schema carrying it to components.schemas under that name and
 * leaves a $ref in its place. The validators and serializers ignore the keyword, so a route
 * keeps validating against the very schema object it declares (no shared-schema lookup at run time).
 */
export const SCHEMA_NAME = 'x-schema-name';

/** The same schema (a copy that stays a TypeBox type), named in the OpenAPI document; names come from framework/entity/names.ts. */
export function named<T extends TSchema>(schema: T, name: string): T {
  // TypeBox keeps a type's kind in a non-enumerable property: a spread would drop it.
  const copy = Object.defineProperties({}, Object.getOwnPropertyDescriptors(schema)) as T;
  return Object.assign(copy, { [SCHEMA_NAME]: name });
}

/**
 * The name a schema goes by in the document: the one named() gave it, else its title when the title
 * is a type name (PascalCase, as the hand-written schemas' titles are: Identity, Tenant, File).
 */
export const nameOf = (schema: unknown): string | undefined => {
  if (typeof schema !== 'object' || schema === null) return undefined;
  const { [SCHEMA_NAME]: name, title } = schema as Record<string, unknown>;
  if (typeof name === 'string') return name;
  return typeof title === 'string' && TYPE_NAME.test(title) ? title : undefined;
};

const TYPE_NAME = /^[A-Z][A-Za-z0-9]*$/;
