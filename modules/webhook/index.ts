import { defineModule, entity } from '../../framework/entity/define.ts';
import { endpoint } from './endpoint.entity.ts';
import { webhookFanOut } from './fan-out.ts';
import { deliveryQueue } from './delivery.ts';
import { deliveryLogPurge, deliveryLogRoutes } from './delivery-log.ts';
import { registerDeliveryLogPage } from './deliveries.admin.ts';
import { eventListRoutes } from './event-list.ts';
import { REDELIVERY_REQUESTED, SECRET_ROTATED, TEST_REQUESTED } from './webhook-events.ts';
import { webhookProblems } from './problems.ts';

/**
 * Outgoing webhooks (docs/webhooks.md): a tenant's endpoints receive its events, signed per the
 * Standard Webhooks specification, retried for about a day, logged, and never sent to the
 * service's own network.
 */
export const webhookModule = defineModule({
  name: 'webhook',
  description: 'Outgoing webhooks: the tenant’s events pushed to its own URLs, signed, retried and logged',
  problems: webhookProblems,
  permissions: [
    {
      name: 'webhook:manage',
      description:
        'Webhook endpoints: create, change, delete, rotate their secret, send test events and read the delivery log',
    },
  ],
  features: [
    { name: 'webhook.endpoints', description: 'Webhook endpoints: the tenant’s events pushed to its own URLs' },
  ],
  limits: [
    {
      name: 'webhook.endpoints',
      unit: 'endpoints',
      description: 'Active webhook endpoints (an inactive one does not count).',
      use: async (ctx) => {
        const row = await ctx.db
          .selectFrom('webhook_endpoints')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('active', '=', true)
          .where('deleted_at', 'is', null)
          .executeTakeFirstOrThrow();
        return Number(row.n);
      },
    },
  ],
  events: [TEST_REQUESTED, REDELIVERY_REQUESTED, SECRET_ROTATED],
  entities: [entity(endpoint)],
  routes: [...deliveryLogRoutes, ...eventListRoutes],
  subscriptions: [webhookFanOut],
  queues: [deliveryQueue],
  jobs: [deliveryLogPurge],
  admin: {
    label: 'Webhooks',
    pages: [registerDeliveryLogPage],
    sidebar: [
      { label: 'Webhook endpoints', path: '/admin/webhook/endpoints', order: 80 },
      { label: 'Webhook deliveries', path: '/admin/webhook/deliveries', order: 81 },
    ],
  },
});
