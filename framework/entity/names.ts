/** Every derived name in one place: tables, paths, operation ids, events, labels, columns. */
import type { EntityNames, SchemaNames } from '../contracts/entity.ts';

export type { EntityNames, SchemaNames } from '../contracts/entity.ts';

export const API_PREFIX = '/api/v1';

export const snakeCase = (s: string): string =>
  s
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/-/g, '_')
    .toLowerCase();

export const camelCase = (s: string): string => s.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

export const titleCase = (s: string): string =>
  s
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[-_]/g, ' ')
    .replace(/^./, (c) => c.toUpperCase());

export const pascalCase = (s: string): string => camelCase(snakeCase(s)).replace(/^./, (c) => c.toUpperCase());

export function schemaNames(entityName: string): SchemaNames {
  const base = pascalCase(entityName);
  return {
    read: base,
    create: `${base}Create`,
    update: `${base}Update`,
    page: pageSchemaName(base),
    command: (command) => `${base}${pascalCase(command)}`,
  };
}

/** A list's answer, named after its item's schema. */
export const pageSchemaName = (itemName: string): string => `${itemName}Page`;

/** A hand-written route's JSON body or answer that was not given a name: named after its operation id. */
export const operationSchemaName = (operationId: string, part: 'Request' | 'Response'): string =>
  `${pascalCase(operationId)}${part}`;

export function entityNames(input: {
  module: string;
  name: string;
  plural?: string;
  table?: string;
  label?: string;
  events?: { created?: string; updated?: string; deleted?: string };
  /** A singleton is one resource, not a collection: its path names it in the singular. */
  singleton?: boolean;
}): EntityNames {
  const plural = input.plural ?? `${input.name}s`;
  const label = input.label ?? titleCase(input.name);
  const prefix = `${input.module}.${input.name}`;
  return {
    key: prefix,
    plural,
    table: input.table ?? snakeCase(plural),
    path: `${API_PREFIX}/${input.module}/${input.singleton ? input.name : plural}`,
    label,
    labelPlural: input.plural ? titleCase(input.plural) : `${label}s`,
    // The API's path segment: /api/v1/<module>/<plural> is administered at /admin/<module>/<plural>.
    adminPath: `/admin/${input.module}/${plural}`,
    events: {
      created: input.events?.created ?? `${prefix}.created`,
      updated: input.events?.updated ?? `${prefix}.updated`,
      deleted: input.events?.deleted ?? `${prefix}.deleted`,
    },
    operationId: (verb) => operationId(input.module, input.name, verb),
    schemas: schemaNames(input.name),
  };
}

export const operationId = (module: string, entity: string, verb: string): string => `${module}-${entity}-${verb}`;

export const GENERIC_VERBS = ['list', 'create', 'read', 'update', 'delete'] as const;
