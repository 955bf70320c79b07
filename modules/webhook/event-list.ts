import Type from 'typebox';
import { defineRoute, type AnyRoute } from '../../framework/entity/define.ts';
import type { ModuleRegistry as Registry } from '../../framework/entity/define.ts';
import { resourceEvents } from '../../framework/catalog/catalog.ts';

const EventItem = Type.Object(
  {
    name: Type.String({ description: 'The event name, as an endpoint’s events list takes it.' }),
    module: Type.String({ description: 'The module that declares it.' }),
    resource: Type.Union([Type.String(), Type.Null()], {
      description:
        'The resource publishing it (<module>.<entity>, as GET /api/v1/admin/resources keys it), or null for an event of the module itself (a sign-in, an upload).',
    }),
  },
  { additionalProperties: false, title: 'WebhookEventName' },
);

/** The event names the endpoint's events field takes (its enum, filled in at boot), "*" left out. */
function accepted(registry: Registry): Set<string> {
  const events = registry.entity('webhook.endpoint').def.fields.events as { items?: { enum?: readonly string[] } };
  return new Set(events.items?.enum ?? []);
}

/** Every event an endpoint may name, with the module and resource behind it, sorted by name; once per registry. */
const lists = new WeakMap<Registry, { name: string; module: string; resource: string | null }[]>();
function eventList(registry: Registry) {
  const known = lists.get(registry);
  if (known) return known;
  const takes = accepted(registry);
  const found = new Map<string, { name: string; module: string; resource: string | null }>();
  for (const entity of registry.entities)
    for (const name of resourceEvents(entity))
      found.set(name, { name, module: entity.module, resource: entity.names.key });
  for (const module of registry.modules)
    for (const name of module.events ?? [])
      if (!found.has(name)) found.set(name, { name, module: module.name, resource: null });
  // The framework's own (an import handed to the worker).
  for (const name of registry.events)
    if (!found.has(name)) found.set(name, { name, module: 'framework', resource: null });
  const list = [...found.values()].filter((e) => takes.has(e.name)).sort((a, b) => (a.name < b.name ? -1 : 1));
  lists.set(registry, list);
  return list;
}

export const eventListRoutes: readonly AnyRoute[] = [
  defineRoute({
    method: 'GET',
    url: '/api/v1/webhook/events',
    operationId: 'webhook-event-list',
    summary: 'The events an endpoint may receive',
    description:
      'Every event name an endpoint’s events list may take, besides "*" (every event): the same names as the enum of the endpoint’s events items, each with the module that declares it and the resource that publishes it, sorted by name. The webhook module’s own requests (webhook.test_requested, webhook.redelivery_requested) are listed but never delivered: the module acts on them itself.',
    tags: ['webhook'],
    access: { permission: 'webhook:manage' },
    schema: {
      response: {
        // Not a page (every name at once), so not `items`, which names a paged list's rows.
        200: Type.Object({ events: Type.Array(EventItem) }, { description: 'The event names, sorted' }),
      },
    },
    handler: async ({ services }) => ({ events: eventList(services.registry) }),
  }),
];
