import Type from 'typebox';
import { defineRoute, type AnyRoute, type JobDefinition } from '../../framework/entity/define.ts';
import { notFound } from '../../framework/errors.ts';
import { isUuid } from '../../framework/operations/entity-ops.ts';
import type { TxContext } from '../../framework/context/tx.ts';
import './webhook-tables.ts';

/** How long the delivery log keeps an attempt. */
export const LOG_RETENTION_DAYS = 30;

export const Delivery = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'This attempt; what send-again names.' }),
    webhookId: Type.String({ description: 'The Webhook-Id sent: the event id, the same on every attempt and on send-again.' }),
    event: Type.String({ description: 'The event type sent.' }),
    attempt: Type.Integer({ minimum: 1, description: '1 for the first attempt, then one more per retry.' }),
    status: Type.Union(['succeeded', 'failed', 'refused', 'dead'].map((s) => Type.Literal(s)), {
      description: 'succeeded (a 2xx answer); failed (another answer, a timeout or a network error: retried); refused (the URL or its address is not allowed: never sent, not retried); dead (the last attempt failed: no more retries).',
    }),
    httpStatus: Type.Union([Type.Integer(), Type.Null()], { description: 'The receiver’s status code; null when nothing answered.' }),
    durationMs: Type.Integer({ minimum: 0 }),
    error: Type.Union([Type.String(), Type.Null()], { description: 'Why the attempt failed or was refused; null on success.' }),
    createdAt: Type.String({ format: 'date-time', description: 'When the attempt ended.' }),
  },
  { additionalProperties: false, title: 'WebhookDelivery' },
);

/** The endpoint's log, newest first: what the API and the admin page show. */
export async function deliveryLog(tx: TxContext, endpointId: string, limit: number) {
  const rows = await tx.db
    .selectFrom('webhook_deliveries')
    .select(['id', 'message_id', 'event_type', 'attempt', 'status', 'http_status', 'duration_ms', 'error', 'created_at'])
    .where('endpoint_id', '=', endpointId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    webhookId: r.message_id,
    event: r.event_type,
    attempt: r.attempt,
    status: r.status,
    httpStatus: r.http_status,
    durationMs: r.duration_ms,
    error: r.error,
    createdAt: r.created_at.toISOString(),
  }));
}

export const deliveryLogRoutes: readonly AnyRoute[] = [
  defineRoute({
    method: 'GET',
    url: '/api/v1/webhook/deliveries',
    operationId: 'webhook-endpoint-deliveries',
    summary: 'An endpoint’s delivery log',
    description: `Every attempt to deliver to the endpoint in the last ${LOG_RETENTION_DAYS} days, newest first, up to limit (default 50, at most 200). An unknown id, or another tenant's endpoint, is 404 NOT_FOUND.`,
    tags: ['webhook'],
    access: { permission: 'webhook:manage' },
    schema: {
      querystring: Type.Object(
        {
          endpointId: Type.String({ description: 'The endpoint (UUID) whose log is read.' }),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
        },
        { additionalProperties: false },
      ),
      response: { 200: Type.Object({ items: Type.Array(Delivery) }, { additionalProperties: false }) },
    },
    handler: async ({ tx, query }) => {
      if (!isUuid(query.endpointId)) throw notFound();
      const endpoint = await tx.db.selectFrom('webhook_endpoints').select('id').where('id', '=', query.endpointId).where('deleted_at', 'is', null).executeTakeFirst();
      if (!endpoint) throw notFound();
      return { items: await deliveryLog(tx, endpoint.id, query.limit ?? 50) };
    },
  }),
];

/** Daily, per tenant: removes the log's attempts older than 30 days. */
export const deliveryLogPurge: JobDefinition = {
  name: 'webhook-delivery-log-purge',
  cron: '17 3 * * *',
  perTenant: true,
  async run(ctx) {
    const cutoff = new Date(ctx.now.getTime() - LOG_RETENTION_DAYS * 86400_000);
    const deleted = await ctx.transaction((tx) => tx.db.deleteFrom('webhook_deliveries').where('created_at', '<', cutoff).executeTakeFirst());
    return { deleted: Number(deleted.numDeletedRows), before: cutoff.toISOString() };
  },
};
