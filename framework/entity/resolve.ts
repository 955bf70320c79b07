import Type, { type TProperties, type TSchema } from 'typebox';
import type { AnyEntity } from './define.ts';
import { camelCase, entityNames, snakeCase, type EntityNames } from './names.ts';
import { pageQuerySchema, pageSchema } from '../operations/paging.ts';

export const SYSTEM_FIELDS = ['id', 'createdAt', 'updatedAt'] as const;

/** An entity with every derived name, column and schema worked out once at boot. */
export interface ResolvedEntity {
  def: AnyEntity;
  module: string;
  name: string;
  names: EntityNames;
  fields: string[];
  /** field → column */
  columns: Record<string, string>;
  writable: string[];
  patchable: string[];
  immutable: string[];
  commandOwned: Record<string, string>;
  sortable: string[];
  schemas: {
    row: TSchema;
    create: TSchema;
    patch: TSchema;
    list: TSchema;
    listQuery: TSchema;
    idParams: TSchema;
  };
  commandRoute(command: string): string;
}

export { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX } from '../operations/paging.ts';

export const IdParams = Type.Object({ id: Type.String({ description: 'Resource id (UUID)' }) });

export function resolveEntity(def: AnyEntity): ResolvedEntity {
  const names = entityNames(def);
  const fields = Object.keys(def.fields);
  const columns = Object.fromEntries(fields.map((f) => [f, snakeCase(f)]));
  const commandOwned = { ...(def.commandOwned ?? {}) } as Record<string, string>;
  const immutable = [...(def.immutable ?? [])];
  const writable = fields.filter((f) => !(f in commandOwned));
  const patchable = writable.filter((f) => !immutable.includes(f));
  const sortable = ['createdAt', 'updatedAt', ...(def.sortable ?? [])];

  const rowProperties: TProperties = { id: Type.String({ format: 'uuid' }) };
  for (const [field, schema] of Object.entries(def.fields)) {
    rowProperties[field] = Type.IsOptional(schema) ? Type.Union([stripOptional(schema), Type.Null()]) : schema;
  }
  rowProperties.createdAt = Type.String({ format: 'date-time' });
  rowProperties.updatedAt = Type.String({ format: 'date-time' });
  const row = Type.Object(rowProperties, { additionalProperties: false, title: names.label });

  const pick = (keys: string[], partial: boolean): TProperties =>
    Object.fromEntries(keys.map((k) => [k, partial ? Type.Optional(stripOptional(def.fields[k]!)) : def.fields[k]!]));
  const create = Type.Object(pick(writable, false), { additionalProperties: false });
  const patch = Type.Object(pick(patchable, true), { additionalProperties: false, minProperties: 1 });

  // Every parameter is optional with its default filled in before the handler runs.
  const listQuery = pageQuerySchema({ sorts: sortable, defaultSort: 'createdAt' });
  const list = pageSchema(row);

  return {
    def,
    module: def.module,
    name: def.name,
    names,
    fields,
    columns,
    writable,
    patchable,
    immutable,
    commandOwned,
    sortable,
    schemas: { row, create, patch, list, listQuery, idParams: IdParams },
    commandRoute: (command) => `POST ${names.path}/{id}/${command}`,
  };
}

function stripOptional(schema: TSchema): TSchema {
  return Type.IsOptional(schema) ? (Type.Required(Type.Object({ v: schema })).properties as { v: TSchema }).v : schema;
}

export const fieldOfColumn = camelCase;
