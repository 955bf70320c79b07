import Type from 'typebox';
import type { AnyRoute } from '../entity/define.ts';
import type { ModuleRegistry as Registry } from '../contracts/services.ts';
import type { ResolvedEntity } from '../entity/resolve.ts';
import type { TxContext } from '../context/tx.ts';
import { allowsAccess, type OperatorPermissions } from '../access/guard.ts';
import { StringEnum } from '../entity/string-enum.ts';

export const CatalogEntrySchema = Type.Object({
  key: Type.String({ description: '<module>.<entity>' }),
  module: Type.String(),
  name: Type.String(),
  label: Type.String(),
  labelPlural: Type.String(),
  path: Type.String({ description: "Collection path of the generic routes, or a singleton's resource path" }),
  scope: StringEnum(['tenant', 'global'], {
    description: 'tenant: each tenant its own rows; global: one set every tenant reads, the operator writes',
  }),
  singleton: Type.Boolean({ description: 'One row per tenant at path, with no id and no list' }),
  operationIds: Type.Record(Type.String(), Type.String(), {
    description: 'verb → operation id, for the routes the entity serves',
  }),
  endpoints: Type.Record(Type.String(), Type.String(), {
    description: 'verb → "METHOD /path" of the routes the entity serves',
  }),
  permissions: Type.Object({ read: Type.String(), write: Type.String() }),
  canWrite: Type.Boolean({ description: 'Whether this caller holds the write permission here' }),
  schema: Type.Unknown({ description: 'JSON Schema of a row' }),
  writable: Type.Array(Type.String(), { description: 'Fields a create may set' }),
  immutable: Type.Array(Type.String(), {
    description: 'Fields a PATCH may not set: command-owned, create-only and system fields',
  }),
  commandOwned: Type.Record(Type.String(), Type.String(), { description: 'field → command route that owns it' }),
  commands: Type.Array(Type.String()),
  events: Type.Array(Type.String(), {
    description:
      'The events the resource publishes, by name: its created, updated and deleted events and what its commands and hooks publish (what a webhook endpoint subscribes to).',
  }),
  eventPayloads: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), {
      description:
        "event → JSON Schema of its payload, for those of the resource's events whose module declares one (ModuleDefinition.eventPayloads): what a webhook delivery's data holds (docs/webhooks.md)",
    }),
  ),
  admin: Type.Optional(Type.Unknown()),
});

/** The events an entity publishes: its lifecycle events, then its commands' and hooks' own, each once. */
export function resourceEvents(entity: ResolvedEntity): string[] {
  const { def, names } = entity;
  return [
    ...new Set([
      ...Object.values(names.events),
      ...Object.values(def.commands ?? {}).flatMap((c) => c.publishes ?? []),
      ...(def.hookPublishes ?? []),
    ]),
  ];
}

export function catalogEntry(
  entity: ResolvedEntity,
  ctx: TxContext,
  operator: OperatorPermissions & Pick<Registry, 'eventPayloads'>,
) {
  const { names, def } = entity;
  const commands = Object.keys(def.commands ?? {});
  // As the entity's create route decides it (the route's guard).
  const writeAllowed = allowsAccess({ permission: def.permissions.write }, ctx.session, ctx.tenant, operator);
  return {
    key: names.key,
    module: entity.module,
    name: entity.name,
    label: names.label,
    labelPlural: names.labelPlural,
    path: names.path,
    scope: entity.scope,
    singleton: entity.singleton,
    operationIds: Object.fromEntries(entity.endpoints.map((e) => [e.verb, names.operationId(e.verb)])),
    endpoints: Object.fromEntries(entity.endpoints.map((e) => [e.verb, `${e.method} ${e.path}`])),
    permissions: { ...def.permissions },
    canWrite: writeAllowed,
    schema: entity.schemas.row,
    writable: entity.writable,
    immutable: [
      'id',
      'createdAt',
      'updatedAt',
      ...Object.keys(entity.commandOwned),
      ...entity.readOnly,
      ...entity.immutable,
    ],
    commandOwned: Object.fromEntries(Object.entries(entity.commandOwned).map(([f, c]) => [f, entity.commandRoute(c)])),
    commands,
    events: resourceEvents(entity),
    ...payloadsOf(resourceEvents(entity), operator),
    ...catalogAdmin(entity),
  };
}

/** The declared payload schemas of these events, if any declares one. */
function payloadsOf(
  events: readonly string[],
  registry: Pick<Registry, 'eventPayloads'>,
): { eventPayloads?: Record<string, unknown> } {
  const declared = events.flatMap((event) => {
    const schema = registry.eventPayloads.get(event);
    return schema ? [[event, schema] as const] : [];
  });
  return declared.length > 0 ? { eventPayloads: Object.fromEntries(declared) } : {};
}

/**
 * The admin part's list settings and names for people, as declared: never its field text, its
 * references or its widgets, which are the shell's business, not a program's.
 */
function catalogAdmin({ def }: ResolvedEntity): { admin?: Record<string, unknown> } {
  const { title, columns, label, labelPlural } = def.admin ?? {};
  const admin = Object.fromEntries(
    Object.entries({ title, columns, label, labelPlural }).filter(([, value]) => value !== undefined),
  );
  return Object.keys(admin).length > 0 ? { admin } : {};
}

/**
 * The entities this caller may read, as their read routes' guard decides: the permission, and an
 * operator permission only in the operator tenant. The catalog and the admin dashboard list this same set.
 */
export function readableEntities(registry: Registry, ctx: TxContext): ResolvedEntity[] {
  return registry.entities.filter((e) =>
    allowsAccess({ permission: e.def.permissions.read }, ctx.session, ctx.tenant, registry),
  );
}

/** GET /api/v1/admin/resources: the resources this caller may read; the rest is omitted. */
export function catalogRoute(registry: Registry): AnyRoute {
  return {
    method: 'GET',
    url: '/api/v1/admin/resources',
    operationId: 'admin-resource-list',
    summary: 'Catalog of the resources the caller may read',
    tags: ['admin'],
    access: 'signedIn',
    schema: {
      response: {
        200: Type.Object(
          { resources: Type.Array(CatalogEntrySchema) },
          { description: 'The resources the caller may read' },
        ),
      },
    },
    handler: async ({ tx }) => ({
      resources: readableEntities(registry, tx).map((e) => catalogEntry(e, tx, registry)),
    }),
  };
}
