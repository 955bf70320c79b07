import type { QueueDefinition, Services, TxContext } from '../../framework/entity/define.ts';
import { tenantById } from '../../framework/context/tenant-lookup.ts';
import { send, type Attempt } from './send.ts';
import { policyOf } from './target-url.ts';
import { signatureHeader } from './signing.ts';
import { DELIVERY_QUEUE } from './webhook-events.ts';
import { notify } from '../notification/notify.ts';
import { usersService } from '../user/users-service.ts';
import './webhook-tables.ts';

/** One message for one endpoint: the event (id, name, payload as in the outbox), its tenant and the endpoint. */
export interface DeliveryJob extends Record<string, unknown> {
  tenantId: string;
  endpointId: string;
  /** The event id: the Webhook-Id, kept by every retry and by "send again". */
  id: string;
  name: string;
  createdAt: string;
  payload: Record<string, unknown>;
  /** Test events and "send again": delivered to an inactive endpoint too. */
  evenIfInactive?: boolean;
  /** The log id of the first attempt, when it was promised already (send-test-event answers it). */
  firstAttemptId?: string;
}

/** About 24 hours of retries: the delays double from the base up to an hour. */
const RETRY_WINDOW_S = 24 * 3600;
const MAX_DELAY_S = 3600;

/**
 * The retries webhooks.retry_base_ms implies: the first delay in whole seconds (pg-boss's unit),
 * doubling to an hour, and as many retries as fit in about 24 hours (pg-boss jitters each delay
 * between half and all of its doubled value, so the last one comes a little earlier on average).
 */
export function deliveryRetry(baseMs: number): { retryDelay: number; retryDelayMax: number; retryLimit: number } {
  const retryDelay = Math.max(1, Math.round(baseMs / 1000));
  let total = 0;
  let retries = 0;
  while (total < RETRY_WINDOW_S) {
    total += Math.min(MAX_DELAY_S, retryDelay * 2 ** retries);
    retries++;
  }
  return { retryDelay, retryDelayMax: MAX_DELAY_S, retryLimit: retries };
}

/** The request body: `{id, type, createdAt, tenant, data}`, data the event's payload (no addresses, bodies or links: SPEC). */
export function messageBody(job: DeliveryJob): string {
  return JSON.stringify({
    id: job.id,
    type: job.name,
    createdAt: job.createdAt,
    tenant: job.tenantId,
    data: job.payload,
  });
}

function logStatus(attempt: Attempt, last: boolean): 'succeeded' | 'failed' | 'refused' | 'dead' {
  if (attempt.outcome === 'refused') return 'refused';
  if (attempt.outcome === 'answered' && attempt.status >= 200 && attempt.status < 300) return 'succeeded';
  return last ? 'dead' : 'failed';
}

function errorOf(attempt: Attempt): string | null {
  if (attempt.outcome !== 'answered') return attempt.error;
  if (attempt.status >= 200 && attempt.status < 300) return null;
  if (attempt.status >= 300 && attempt.status < 400) return `answered ${attempt.status}: redirects are not followed`;
  return `answered ${attempt.status}`;
}

/** How long an endpoint may keep failing before it is turned inactive. */
export const DEACTIVATE_AFTER_MS = 3 * 86400_000;

/**
 * Keeps the endpoint's failure streak: a success ends it; a failure starts it, or, once it has
 * lasted 3 days, turns the endpoint inactive (publishing its updated event) and notifies the
 * tenant's active admins. The row is locked, so two attempts ending together deactivate once.
 */
async function recordHealth(ctx: TxContext, endpointId: string, status: string, now: Date): Promise<void> {
  const endpoint = await ctx.db
    .selectFrom('webhook_endpoints')
    .select(['url', 'active', 'failing_since'])
    .where('id', '=', endpointId)
    .forUpdate()
    .executeTakeFirst();
  if (!endpoint) return;
  if (status === 'succeeded') {
    if (endpoint.failing_since)
      await ctx.db.updateTable('webhook_endpoints').set({ failing_since: null }).where('id', '=', endpointId).execute();
    return;
  }
  if (!endpoint.failing_since) {
    await ctx.db.updateTable('webhook_endpoints').set({ failing_since: now }).where('id', '=', endpointId).execute();
    return;
  }
  if (!endpoint.active || now.getTime() - endpoint.failing_since.getTime() < DEACTIVATE_AFTER_MS) return;
  await ctx.db
    .updateTable('webhook_endpoints')
    .set({ active: false, updated_at: now })
    .where('id', '=', endpointId)
    .execute();
  ctx.publish('webhook.endpoint.updated', { id: endpointId, changed: ['active'] });
  const host = new URL(endpoint.url).host;
  for (const recipientId of await usersService.activeHolding(ctx, ['admin'])) {
    await notify(ctx, {
      recipientId,
      title: 'A webhook endpoint was turned off',
      body: `Deliveries to the webhook endpoint at ${host} kept failing for 3 days, so it no longer receives events. Check the receiver, then make the endpoint active again.`,
      link: `/admin/webhook/endpoints/${endpointId}`,
      email: true,
    });
  }
}

/**
 * One attempt: reads the endpoint (and its secrets) in the tenant's transaction, sends with no
 * transaction open, and logs the attempt in a transaction of its own. A non-2xx answer, a timeout
 * or a network error throws, so pg-boss retries it; a refused target (scheme, address) is logged
 * and not retried, as retrying cannot change the answer.
 */
async function deliverOnce(
  data: Record<string, unknown>,
  services: Services,
  attempt: { number: number; last: boolean },
): Promise<void> {
  const job = data as DeliveryJob;
  const tenant = await tenantById(services.db, job.tenantId);
  if (!tenant) return;
  const endpoint = await services.transactions.run(tenant, (ctx) =>
    ctx.db
      .selectFrom('webhook_endpoints')
      .select(['url', 'active', 'secret', 'previous_secret', 'previous_secret_until'])
      .where('id', '=', job.endpointId)
      .where('deleted_at', 'is', null)
      .executeTakeFirst(),
  );
  if (!endpoint?.secret || (!endpoint.active && !job.evenIfInactive)) return;
  const now = services.clock.now();
  const timestamp = Math.floor(now.getTime() / 1000);
  const body = messageBody(job);
  const secrets =
    endpoint.previous_secret && endpoint.previous_secret_until && endpoint.previous_secret_until > now
      ? [endpoint.secret, endpoint.previous_secret]
      : [endpoint.secret];
  const headers = {
    'webhook-id': job.id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secrets, job.id, timestamp, body),
  };
  const result = await send(endpoint.url, headers, body, policyOf(services.config.webhooks));
  const status = logStatus(result, attempt.last);
  const error = errorOf(result);
  await services.transactions.run(tenant, async (ctx) => {
    await recordHealth(ctx, job.endpointId, status, now);
    await ctx.db
      .insertInto('webhook_deliveries')
      .values({
        ...(attempt.number === 1 && job.firstAttemptId ? { id: job.firstAttemptId } : {}),
        endpoint_id: job.endpointId,
        message_id: job.id,
        event_type: job.name,
        message_created_at: new Date(job.createdAt),
        data: JSON.stringify(job.payload),
        attempt: attempt.number,
        status,
        http_status: result.outcome === 'answered' ? result.status : null,
        duration_ms: result.durationMs,
        error,
      })
      .execute();
  });
  const logged = {
    endpointId: job.endpointId,
    tenantId: job.tenantId,
    event: job.name,
    webhookId: job.id,
    attempt: attempt.number,
    status,
    error,
  };
  if (status === 'succeeded') services.log.info(logged, 'webhook delivered');
  else services.log.warn(logged, 'webhook delivery failed');
  if (status === 'failed' || status === 'dead')
    throw new Error(`webhook delivery to endpoint ${job.endpointId} failed: ${error}`);
}

/**
 * Deliveries: 8 at once per worker process, at most 6 of one tenant and 2 of one endpoint, a free
 * slot going first to a tenant with none running: one slow endpoint holds at most 2 of a process's
 * slots, and one tenant's flood leaves 2 to the others, whose deliveries do not queue behind it.
 */
export const deliveryQueue: QueueDefinition = {
  name: DELIVERY_QUEUE,
  retry: (config) => deliveryRetry(config.webhooks.retry_base_ms),
  groupConcurrency: 2,
  tenantConcurrency: 6,
  concurrency: 8,
  work: deliverOnce,
};
