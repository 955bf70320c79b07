import { operationSchemaName } from '../entity/names.ts';
import { SCHEMA_NAME, nameOf } from './schema-name.ts';

type Json = Record<string, unknown>;

const COMPONENT_PREFIX = '#/components/schemas/';
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isJson = (mediaType: string): boolean => mediaType === 'application/json';

/**
 * Gives every body and answer of the document a name a consumer can use: each schema named with
 * named() (an entity's Task, TaskCreate, TaskUpdate, TaskPage, a command's TaskAssign, a hand-written
 * route's own) moves to components.schemas and is referenced by $ref, wherever it is nested; a JSON
 * request body or 2xx answer left unnamed is named after its operation (<OperationId>Request,
 * <OperationId>Response). Two different schemas under one name are a programming error: the document
 * refuses to build rather than let one silently replace the other.
 */
export function nameSchemas(document: Json): Json {
  const components = (document.components ?? {}) as Json;
  const schemas = { ...((components.schemas ?? {}) as Record<string, unknown>) };
  const registered = new Map<string, string>(
    Object.entries(schemas).map(([name, schema]) => [name, JSON.stringify(schema)]),
  );

  const register = (name: string, schema: Json): Json => {
    const { [SCHEMA_NAME]: _name, ...clean } = schema;
    const text = JSON.stringify(clean);
    const known = registered.get(name);
    if (known !== undefined && known !== text)
      throw new Error(`OpenAPI: two different schemas are named ${name}; give one of them another name`);
    registered.set(name, text);
    schemas[name] = clean;
    return { $ref: `${COMPONENT_PREFIX}${name}` };
  };

  // Children first, so that a named page's items are a $ref to the named item.
  const hoist = (schema: unknown, fallbackName?: string): unknown => {
    if (Array.isArray(schema)) return schema.map((s) => hoist(s));
    if (!isObject(schema) || typeof schema.$ref === 'string') return schema;
    const out: Json = {};
    for (const [key, value] of Object.entries(schema)) {
      if (key === 'properties' || key === 'patternProperties' || key === '$defs') {
        out[key] = Object.fromEntries(Object.entries(value as Json).map(([k, v]) => [k, hoist(v)]));
      } else if (
        ['items', 'additionalProperties', 'anyOf', 'oneOf', 'allOf', 'not', 'prefixItems', 'contains'].includes(key)
      ) {
        out[key] = hoist(value);
      } else out[key] = value;
    }
    const name = nameOf(out) ?? fallbackName;
    return name ? register(name, out) : out;
  };

  const paths = (document.paths ?? {}) as Record<string, Record<string, Json>>;
  for (const operations of Object.values(paths)) {
    for (const operation of Object.values(operations)) {
      if (!isObject(operation) || typeof operation.operationId !== 'string') continue;
      const id = operation.operationId;
      const body = operation.requestBody as { content?: Record<string, Json> } | undefined;
      for (const [mediaType, media] of Object.entries(body?.content ?? {})) {
        media.schema = hoist(media.schema, isJson(mediaType) ? operationSchemaName(id, 'Request') : undefined);
      }
      const responses = Object.entries(
        (operation.responses ?? {}) as Record<string, { description?: string; content?: Record<string, Json> }>,
      );
      const successes = responses.filter(
        ([status, response]) => status.startsWith('2') && response.content?.['application/json'],
      );
      for (const [status, response] of responses) {
        for (const [mediaType, media] of Object.entries(response.content ?? {})) {
          const success = status.startsWith('2') && isJson(mediaType);
          // The answer's sentence is the response's description; in the schema it would make the same
          // shape two different schemas (e.g. "The role, created" and "The role, replaced").
          if (success && isObject(media.schema) && media.schema.description === response.description) {
            const { description: _sentence, ...shape } = media.schema;
            media.schema = shape;
          }
          const fallback =
            successes.length > 1
              ? `${operationSchemaName(id, 'Response')}${status}`
              : operationSchemaName(id, 'Response');
          media.schema = hoist(media.schema, success ? fallback : undefined);
        }
      }
    }
  }
  return { ...document, components: { ...components, schemas: sortedByName(schemas) } };
}

const sortedByName = (schemas: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)));
