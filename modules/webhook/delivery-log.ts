import Type from 'typebox';
import { defineRoute, type AnyRoute, type JobDefinition } from '../../framework/entity/define.ts';
import type { TxContext } from '../../framework/entity/define.ts';
import { pageSchema } from '../../framework/operations/paging.ts';
import { QueryList } from '../../framework/query/query-list.ts';
import './webhook-tables.ts';
import { StringEnum } from '../../framework/entity/string-enum.ts';

/** How long the delivery log keeps an attempt. */
export const LOG_RETENTION_DAYS = 30;

export const Delivery = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'This attempt; what send-again names.' }),
    endpointId: Type.String({ format: 'uuid', description: 'The endpoint it was sent to.' }),
    webhookId: Type.String({
      description: 'The Webhook-Id sent: the event id, the same on every attempt and on send-again.',
    }),
    event: Type.String({ description: 'The event type sent.' }),
    attempt: Type.Integer({ minimum: 1, description: '1 for the first attempt, then one more per retry.' }),
    status: StringEnum(['succeeded', 'failed', 'refused', 'dead'], {
      description:
        'succeeded (a 2xx answer); failed (another answer, a timeout or a network error: retried); refused (the URL or its address is not allowed: never sent, not retried); dead (the last attempt failed: no more retries).',
    }),
    httpStatus: Type.Union([Type.Integer(), Type.Null()], {
      description: 'The receiver’s status code; null when nothing answered.',
    }),
    durationMs: Type.Integer({ minimum: 0 }),
    error: Type.Union([Type.String(), Type.Null()], {
      description: 'Why the attempt failed or was refused; null on success.',
    }),
    createdAt: Type.String({ format: 'date-time', description: 'When the attempt ended.' }),
  },
  { additionalProperties: false, title: 'WebhookDelivery' },
);

const COLUMNS = `id, endpoint_id as "endpointId", message_id as "webhookId", event_type as "event", attempt, status,
  http_status as "httpStatus", duration_ms as "durationMs", error, created_at as "createdAt"`;

/**
 * The tenant's log over all its endpoints, through the query language like every list: by
 * endpoint (`endpointId=eq.<id>`, read from the (tenant_id, endpoint_id, created_at, id) index), by
 * result (`status=in.(failed,dead)`), by event, attempt, answer or time. Paged by (created_at, id)
 * from the log's age index by default.
 */
export const deliveryList = new QueryList({
  label: 'webhook deliveries',
  item: Delivery,
  select: COLUMNS,
  from: 'webhook_deliveries',
  columns: {
    id: 'id',
    endpointId: 'endpoint_id',
    webhookId: 'message_id',
    event: 'event_type',
    attempt: 'attempt',
    status: 'status',
    httpStatus: 'http_status',
    durationMs: 'duration_ms',
    error: 'error',
    createdAt: 'created_at',
  },
  indexed: ['createdAt'],
  defaultSort: '-createdAt',
  sortDescription: 'Newest first (-createdAt) unless sort asks for another order.',
});

/** The delivery log's query string: paging, sort, a filter per field, or and fields. */
export const DeliveryListQuery = deliveryList.querySchema;

/** A page of the tenant's delivery log as a request's query string asks (the API's list and the admin page). */
export async function deliveryLogPage(tx: TxContext, query: unknown) {
  return (await deliveryList.page(tx, query as Record<string, unknown>)).page;
}

/** Where the API lists the log (and exports it, ?format=csv). */
export const DELIVERIES_PATH = '/api/v1/webhook/deliveries';

export const deliveryLogRoutes: readonly AnyRoute[] = [
  defineRoute({
    method: 'GET',
    url: DELIVERIES_PATH,
    operationId: 'webhook-delivery-list',
    summary: 'The delivery log',
    description: `Every attempt to deliver to the tenant's endpoints in the last ${LOG_RETENTION_DAYS} days, newest first by default, each naming its endpoint (endpointId). Filtered, sorted and paged like every list (docs/api-conventions.md, "Filters"): by endpoint (endpointId=eq.<id>), by result (status=in.(failed,dead)), by event or time (createdAt=gte.now-1d); limit and offset, or after=<next> from the previous page; total counted up to 10000. Another tenant's attempts are never listed, whatever the filter.`,
    tags: ['webhook'],
    access: { permission: 'webhook:manage' },
    schema: { querystring: DeliveryListQuery, response: { 200: pageSchema(Delivery, 'A page of the delivery log') } },
    exports: deliveryList.exports('deliveries'),
    handler: ({ tx, query, reply }) => deliveryList.answer(tx, query, reply),
  }),
];

/** Daily, per tenant: removes the log's attempts older than 30 days. */
export const deliveryLogPurge: JobDefinition = {
  name: 'webhook-delivery-log-purge',
  cron: '17 3 * * *',
  perTenant: true,
  async run(ctx) {
    const cutoff = new Date(ctx.now.getTime() - LOG_RETENTION_DAYS * 86400_000);
    const deleted = await ctx.transaction((tx) =>
      tx.db.deleteFrom('webhook_deliveries').where('created_at', '<', cutoff).executeTakeFirst(),
    );
    return { deleted: Number(deleted.numDeletedRows), before: cutoff.toISOString() };
  },
};
