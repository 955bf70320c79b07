import type { SubscriptionDefinition, SubscriptionJobs, TxContext } from '../../framework/entity/define.ts';
import { isUuid } from '../../framework/operations/entity-ops.ts';
import { uuidv7 } from '../../framework/db/uuidv7.ts';
import { ALL_EVENTS, DELIVERY_QUEUE, REDELIVERY_REQUESTED, TEST_EVENT_TYPE, TEST_REQUESTED } from './webhook-events.ts';
import type { DeliveryJob } from './delivery.ts';
import './webhook-tables.ts';

const uuidOf = (value: unknown): string | undefined => (typeof value === 'string' && isUuid(value) ? value : undefined);

/** The module's own requests: acted on here, never forwarded to endpoints. */
const INTERNAL = new Set([TEST_REQUESTED, REDELIVERY_REQUESTED]);

async function queue(jobs: SubscriptionJobs, job: DeliveryJob): Promise<void> {
  await jobs.send(DELIVERY_QUEUE, job, { group: job.endpointId });
}

async function forward(
  ctx: TxContext,
  event: { id: string; name: string; occurredAt: string; payload: Record<string, unknown> },
  jobs: SubscriptionJobs,
): Promise<void> {
  const endpoints = await ctx.db
    .selectFrom('webhook_endpoints')
    .select('id')
    .where('deleted_at', 'is', null)
    .where('active', '=', true)
    .where('secret', 'is not', null)
    .where((eb) =>
      eb.or([eb(eb.val(event.name), '=', eb.fn.any('events')), eb(eb.val(ALL_EVENTS), '=', eb.fn.any('events'))]),
    )
    .execute();
  for (const { id } of endpoints) {
    await queue(jobs, {
      tenantId: ctx.tenant.id,
      endpointId: id,
      id: event.id,
      name: event.name,
      createdAt: event.occurredAt,
      payload: event.payload,
    });
  }
}

/**
 * On every event: one queued delivery per active endpoint of the event's tenant that wants it,
 * queued in the event's own transaction (so a retried subscription queues nothing twice). Also
 * turns the endpoint commands' requests into deliveries: a test event, a logged message again.
 */
export const webhookFanOut: SubscriptionDefinition = {
  name: 'webhook-fan-out',
  event: '*',
  // A tenant with no endpoint gets no job per event (its own requests come from an endpoint's commands).
  onlyTenantsWith: { table: 'webhook_endpoints' },
  async handle(ctx, event, _services, jobs) {
    if (!jobs) throw new Error('webhook-fan-out queues deliveries: it runs in the worker, which passes its jobs');
    if (!INTERNAL.has(event.name)) return forward(ctx, event, jobs);
    const endpointId = uuidOf(event.payload.id);
    if (!endpointId) return;
    if (event.name === TEST_REQUESTED) {
      const deliveryId = uuidOf(event.payload.deliveryId);
      await queue(jobs, {
        tenantId: ctx.tenant.id,
        endpointId,
        id: uuidv7(ctx.now.getTime()),
        name: TEST_EVENT_TYPE,
        createdAt: event.occurredAt,
        payload: { endpointId },
        evenIfInactive: true,
        ...(deliveryId ? { firstAttemptId: deliveryId } : {}),
      });
      return;
    }
    const deliveryId = uuidOf(event.payload.deliveryId);
    if (!deliveryId) return;
    const logged = await ctx.db
      .selectFrom('webhook_deliveries')
      .select(['message_id', 'event_type', 'message_created_at', 'data'])
      .where('id', '=', deliveryId)
      .where('endpoint_id', '=', endpointId)
      .executeTakeFirst();
    if (!logged) return;
    await queue(jobs, {
      tenantId: ctx.tenant.id,
      endpointId,
      id: logged.message_id,
      name: logged.event_type,
      createdAt: logged.message_created_at.toISOString(),
      payload: (logged.data ?? {}) as Record<string, unknown>,
      evenIfInactive: true,
    });
  },
};
