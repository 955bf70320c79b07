import Type from 'typebox';
import { WithDefault } from '../../framework/entity/storage.ts';

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
    description: 'The event names it receives: names the service publishes (GET /api/v1/admin/resources lists them), or "*" for every event.',
    examples: [['*']],
  }),
  active: Type.Optional(WithDefault(Type.Boolean({ description: 'Only active endpoints receive deliveries.' }), true)),
};

export type EndpointFields = typeof endpointFields;
