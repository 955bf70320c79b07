import Type, { type TProperties, type TSchema } from 'typebox';
import type { AnyEntity } from './define.ts';
import { camelCase, entityNames, snakeCase } from './names.ts';
import type { EntityEndpoint, ResolvedEntity } from '../contracts/entity.ts';
import { pageQuerySchema, pageSchema } from '../operations/paging.ts';
import { named } from '../openapi/schema-name.ts';
import { declaredDefault } from './storage.ts';
import { isSecret } from './secret-field.ts';

export const SYSTEM_FIELDS = ['id', 'createdAt', 'updatedAt'] as const;

export type { EntityEndpoint, ResolvedEntity } from '../contracts/entity.ts';

export { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX } from '../operations/paging.ts';

export const IdParams = Type.Object({ id: Type.String({ description: 'Resource id (UUID)' }) });

/** No query parameters: what a read takes until its entity's operations declare its query (EntityOperations). */
const NoQuery = Type.Object({}, { additionalProperties: false });

export function resolveEntity(def: AnyEntity): ResolvedEntity {
  const names = entityNames({ ...def, table: def.storage?.table });
  const fields = Object.keys(def.fields);
  const columns = Object.fromEntries(fields.map((f) => [f, snakeCase(f)]));
  const commandOwners: Record<string, readonly string[]> = Object.fromEntries(
    Object.entries(def.commandOwned ?? {}).map(([field, owner]) => [
      field,
      typeof owner === 'string' ? [owner] : [...(owner as readonly string[])],
    ]),
  );
  const commandOwned = Object.fromEntries(
    Object.entries(commandOwners).flatMap(([field, owners]) => (owners[0] ? [[field, owners[0]]] : [])),
  ) as Record<string, string>;
  const immutable = [...(def.immutable ?? [])];
  const readOnly = [...(def.readOnly ?? [])];
  const computed = Object.keys(def.computed ?? {});
  const writable = fields.filter((f) => !(f in commandOwners) && !readOnly.includes(f));
  const patchable = writable.filter((f) => !immutable.includes(f));
  const sortable = ['createdAt', 'updatedAt', ...(def.sortable ?? [])];

  // A field with a column default (WithDefault) always holds a value: its row property is never null.
  const nullable = (schema: TSchema): TSchema =>
    clearable(schema) ? Type.Union([stripOptional(schema), Type.Null()]) : stripOptional(schema);
  const rowProperties: TProperties = { id: Type.String({ format: 'uuid' }) };
  for (const [field, schema] of Object.entries(def.fields)) rowProperties[field] = nullable(schema);
  rowProperties.createdAt = Type.String({ format: 'date-time' });
  rowProperties.updatedAt = Type.String({ format: 'date-time' });
  for (const [field, schema] of Object.entries(def.computed ?? {})) rowProperties[field] = nullable(schema);
  const row = named(
    Type.Object(rowProperties, { additionalProperties: false, title: names.label }),
    names.schemas.read,
  );
  const changes = Type.Object(Object.fromEntries(fields.map((f) => [f, Type.Optional(nullable(def.fields[f]!))])), {
    additionalProperties: false,
  });

  // A create may leave out a field with a column default (WithDefault): the column takes it.
  const createField = (schema: TSchema): TSchema =>
    declaredDefault(schema) !== undefined && !Type.IsOptional(schema) ? Type.Optional(schema) : schema;
  const create = named(
    Type.Object(Object.fromEntries(writable.map((k) => [k, createField(def.fields[k]!)])), {
      additionalProperties: false,
    }),
    names.schemas.create,
  );
  // PATCH: every field optional; an optional one may be sent as null, which clears it.
  const patch = named(
    Type.Object(Object.fromEntries(patchable.map((k) => [k, Type.Optional(patchSchema(def.fields[k]!))])), {
      additionalProperties: false,
      minProperties: 1,
    }),
    names.schemas.update,
  );

  // Every parameter is optional with its default filled in before the handler runs.
  const title = def.admin?.title;
  const searchable = [...(def.searchable ?? (title !== undefined && isStringField(def.fields[title]) ? [title] : []))];
  const listQuery = pageQuerySchema({ sorts: sortable, defaultSort: 'createdAt', searches: searchable });
  const list = pageSchema(row);

  const singleton = def.singleton === true;
  const commandNames = Object.keys(def.commands ?? {});
  const item = singleton ? names.path : `${names.path}/{id}`;
  const declared = new Set(def.singletonRoutes ?? []);
  const endpoints: EntityEndpoint[] = singleton
    ? [
        { verb: 'read', method: 'GET', path: item },
        ...(declared.has('replace') ? [{ verb: 'replace', method: 'PUT', path: item } as const] : []),
        ...(declared.has('update') ? [{ verb: 'update', method: 'PATCH', path: item } as const] : []),
        ...(declared.has('delete') ? [{ verb: 'delete', method: 'DELETE', path: item } as const] : []),
      ]
    : [
        { verb: 'list', method: 'GET', path: names.path },
        { verb: 'create', method: 'POST', path: names.path },
        { verb: 'read', method: 'GET', path: item },
        { verb: 'update', method: 'PATCH', path: item },
        { verb: 'delete', method: 'DELETE', path: item },
      ];
  for (const command of commandNames) endpoints.push({ verb: command, method: 'POST', path: `${item}/${command}` });
  // History (framework/history/), unless the entity keeps none; a singleton restores only through its PATCH.
  if (def.history !== false) {
    endpoints.push({ verb: 'history', method: 'GET', path: `${item}/history` });
    if (!singleton || declared.has('update'))
      endpoints.push({ verb: 'restore', method: 'POST', path: `${item}/restore` });
  }

  return {
    def,
    module: def.module,
    name: def.name,
    names,
    scope: def.scope ?? 'tenant',
    singleton,
    deleteMode: def.storage?.deleteMode ?? 'soft',
    fields,
    columns,
    writable,
    patchable,
    immutable,
    commandOwned,
    commandOwners,
    readOnly,
    computed,
    sortable,
    searchable,
    endpoints,
    schemas: { row, create, patch, list, listQuery, readQuery: NoQuery, idParams: IdParams, changes },
    commandRoute: (command) => `POST ${item}/${command}`,
  };
}

/**
 * Whether PATCH may clear the field with null: an optional field with no column default, which
 * reads answer as null when it holds no value. A field with a default (WithDefault) always holds
 * one (its column is not null), so it takes a value, not null.
 */
export function clearable(schema: TSchema): boolean {
  return Type.IsOptional(schema) && declaredDefault(schema) === undefined;
}

/**
 * A field's schema in a PATCH body: the field's own, or, for a clearable field, the same admitting
 * null. An enum lists null among its values; a schema with one JSON type says so with a type list
 * (`["string", "null"]`, one refusal naming both); any other takes `anyOf` a null branch.
 */
function patchSchema(schema: TSchema): TSchema {
  const plain = stripOptional(schema);
  if (!clearable(schema)) return plain;
  const node = plain as TSchema & { type?: unknown; enum?: unknown[] };
  // An enum of its own (Type.Enum): null joins its values, so a refusal still names them all.
  if (node.type === undefined && Array.isArray(node.enum)) return { ...node, enum: [...node.enum, null] } as TSchema;
  if (typeof node.type !== 'string' || node.type === 'null') return Type.Union([plain, Type.Null()]);
  const copy = { ...node, type: [node.type, 'null'] } as Record<string, unknown>;
  if (Array.isArray(node.enum)) copy.enum = [...node.enum, null];
  return copy as TSchema;
}

/** A plain string field (not a date-time, not a secret), which `q` can search as text. */
function isStringField(schema: TSchema | undefined): boolean {
  const node = schema as { type?: unknown; format?: unknown } | undefined;
  // A Secret() title is never searched: which rows `q` matches would tell the secret.
  return node?.type === 'string' && node.format !== 'date-time' && !isSecret(schema);
}

function stripOptional(schema: TSchema): TSchema {
  return Type.IsOptional(schema) ? (Type.Required(Type.Object({ v: schema })).properties as { v: TSchema }).v : schema;
}

export const fieldOfColumn = camelCase;
