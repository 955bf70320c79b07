import Type from 'typebox';
import { WithDefault } from '../../framework/entity/storage.ts';
import { EventName } from '../../framework/entity/event-names.ts';
import { ALL_EVENTS } from './webhook-events.ts';
import type { FieldTexts } from '../../framework/entity/field-text.ts';

export const endpointFields = {
  url: Type.String({
    minLength: 8,
    maxLength: 2000,
    pattern: '^[hH][tT][tT][pP][sS]?://[^\\s]+$',
    description:
      'Where the events are POSTed: an https:// URL (http:// only where webhooks.allow_http is on), with a host and no user name or password. A URL no delivery could reach is refused with 422 VALIDATION_FAILED, naming the setting: http:// while webhooks.allow_http is off, a literal private, loopback or other non-public address while webhooks.allow_private_networks is off, an empty authority (http:///x). A host name must resolve to public addresses when each delivery is made; redirects are not followed.',
    examples: ['https://hooks.example.com/tenantry'],
  }),
  description: Type.Optional(Type.String({ maxLength: 500, description: 'What the endpoint is for.' })),
  // The names are every event the modules declare, filled in at boot (framework/entity/event-names.ts).
  events: Type.Array(EventName({ also: [ALL_EVENTS] }), {
    minItems: 1,
    maxItems: 100,
    uniqueItems: true,
    description:
      'The event names it receives: "*" for every event, or names the service publishes (the enum; GET /api/v1/webhook/events lists them with their module, and each resource of GET /api/v1/admin/resources lists its own). The webhook module’s own requests (webhook.test_requested, webhook.redelivery_requested) are acted on, never delivered.',
    examples: [['*']],
  }),
  active: Type.Optional(WithDefault(Type.Boolean({ description: 'Only active endpoints receive deliveries.' }), true)),
};

export type EndpointFields = typeof endpointFields;

/** What a person reads about each field in the admin shell (the descriptions above are the API's), the signing secret included. */
export const endpointFieldText: FieldTexts<(keyof EndpointFields & string) | 'signingSecret' | 'deliveryId'> = {
  url: {
    label: 'Address',
    hint: 'Where the events are sent, like https://hooks.example.com/tenantry. It must be reachable from the internet.',
    messages: { pattern: 'Enter a web address starting with https://, like https://hooks.example.com/tenantry.' },
  },
  description: { label: 'Description', hint: 'What the endpoint is for, so others know.' },
  events: {
    label: 'Events',
    hint: 'The kinds of events it receives. “All events” also takes the kinds added later.',
    messages: { items: 'Tick at least one kind of event.' },
  },
  active: { label: 'Active', hint: 'Only active endpoints receive events.' },
  signingSecret: { label: 'Signing secret', hint: 'Shown once, when it is made: copy it to the receiving system.' },
  deliveryId: { label: 'Test delivery', hint: 'The test event’s entry in the delivery log, once it has been sent.' },
};
