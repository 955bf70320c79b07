import Type from 'typebox';
import { WithDefault } from '../../framework/entity/storage.ts';
import type { FieldTexts } from '../../framework/entity/field-text.ts';

export const endpointFields = {
  url: Type.String({
    minLength: 8,
    maxLength: 2000,
    pattern: '^[hH][tT][tT][pP][sS]?://[^\\s]+$',
    description:
      'Where the events are POSTed: an https:// URL (http:// only where webhooks.allow_http is on), with no user name or password. Its host must resolve to public addresses unless webhooks.allow_private_networks is on; redirects are not followed.',
    examples: ['https://hooks.example.com/tenantry'],
  }),
  description: Type.Optional(Type.String({ maxLength: 500, description: 'What the endpoint is for.' })),
  events: Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
    minItems: 1,
    maxItems: 100,
    uniqueItems: true,
    description:
      'The event names it receives: names the service publishes (GET /api/v1/admin/resources lists them), or "*" for every event.',
    examples: [['*']],
  }),
  active: Type.Optional(WithDefault(Type.Boolean({ description: 'Only active endpoints receive deliveries.' }), true)),
};

export type EndpointFields = typeof endpointFields;

/** What a person reads about each field in the admin shell (the descriptions above are the API's), the signing secret included. */
export const endpointFieldText: FieldTexts<(keyof EndpointFields & string) | 'signingSecret'> = {
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
};
