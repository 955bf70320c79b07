import Type, { type TProperties, type TSchema } from 'typebox';
import type { AnyEntity } from './define.ts';
import { camelCase, entityNames, snakeCase, type EntityNames } from './names.ts';

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
  /** field → the first command owning it (the catalog's and the refusal's `route`). */
  commandOwned: Record<string, string>;
  /** field → every command that writes it, in declaration order. */
  commandOwners: Record<string, readonly string[]>;
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

export const PAGE_LIMIT_DEFAULT = 20;
export const PAGE_LIMIT_MAX = 100;

export const IdParams = Type.Object({ id: Type.String({ description: 'Resource id (UUID)' }) });

export function resolveEntity(def: AnyEntity): ResolvedEntity {
  const names = entityNames(def);
  const fields = Object.keys(def.fields);
  const columns = Object.fromEntries(fields.map((f) => [f, snakeCase(f)]));
  const commandOwners: Record<string, readonly string[]> = Object.fromEntries(
    Object.entries(def.commandOwned ?? {}).map(([field, owner]) => [field, typeof owner === 'string' ? [owner] : [...(owner as readonly string[])]]),
  );
  const commandOwned = Object.fromEntries(
    Object.entries(commandOwners).flatMap(([field, owners]) => (owners[0] ? [[field, owners[0]]] : [])),
  ) as Record<string, string>;
  const immutable = [...(def.immutable ?? [])];
  const writable = fields.filter((f) => !(f in commandOwners));
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

  const sortValues = sortable.flatMap((f) => [f, `-${f}`]);
  // Every parameter is optional with its default filled in before the handler runs.
  const listQuery = Type.Object(
    {
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_LIMIT_MAX, default: PAGE_LIMIT_DEFAULT, description: `Page size, 1 to ${PAGE_LIMIT_MAX}.` })),
      offset: Type.Optional(Type.Integer({ minimum: 0, default: 0, description: 'Rows to skip.' })),
      sort: Type.Optional(
        Type.Enum(sortValues, {
          default: 'createdAt',
          description: 'Field to sort by; a leading "-" sorts descending. Ties break on id, in the same direction.',
        }),
      ),
    },
    { additionalProperties: false },
  );
  const list = Type.Object(
    {
      items: Type.Array(row),
      total: Type.Integer({ minimum: 0, description: 'Rows matching, across all pages.' }),
      limit: Type.Integer(),
      offset: Type.Integer(),
    },
    { additionalProperties: false },
  );

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
    commandOwners,
    sortable,
    schemas: { row, create, patch, list, listQuery, idParams: IdParams },
    commandRoute: (command) => `POST ${names.path}/{id}/${command}`,
  };
}

function stripOptional(schema: TSchema): TSchema {
  return Type.IsOptional(schema) ? (Type.Required(Type.Object({ v: schema })).properties as { v: TSchema }).v : schema;
}

export const fieldOfColumn = camelCase;
