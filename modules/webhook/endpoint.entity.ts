import Type from 'typebox';
import './webhook-tables.ts';
import { defineCommand, defineEntity, Secret } from '../../framework/entity/define.ts';
import { problem } from '../../framework/errors.ts';
import type { Config, TxContext } from '../../framework/entity/define.ts';
import { policyOf, urlRefusal } from './target-url.ts';
import { endpointFieldText, endpointFields } from './endpoint.fields.ts';
import { generateSecret } from './signing.ts';
import { uuidv7 } from '../../framework/db/uuidv7.ts';
import { ALL_EVENTS, REDELIVERY_REQUESTED, SECRET_ROTATED, TEST_REQUESTED } from './webhook-events.ts';

const command = defineCommand(endpointFields);

/** What one answer shows once, besides the row: a secret made, or the test delivery queued. */
interface ShownOnce {
  signingSecret?: string;
  deliveryId?: string;
}

/**
 * What this transaction made that its answer alone shows (the create's or rotate-secret's secret,
 * send-test-event's delivery id): afterRead adds it to the row; no later read carries it.
 */
const revealed = new WeakMap<TxContext, Map<string, ShownOnce>>();
function reveal(ctx: TxContext, id: string, shown: ShownOnce): void {
  const byRow = revealed.get(ctx) ?? new Map<string, ShownOnce>();
  byRow.set(id, { ...byRow.get(id), ...shown });
  revealed.set(ctx, byRow);
}

function invalid(pointer: string, message: string): never {
  throw problem('VALIDATION_FAILED', `${pointer.slice('/body/'.length)}: ${message}`, {
    errors: [{ pointer, message }],
  });
}

/**
 * A URL every delivery would refuse is refused here, naming the setting that decides (urlRefusal):
 * `http:` while webhooks.allow_http is off, a literal private or loopback address while
 * webhooks.allow_private_networks is off, an empty authority. A host name's addresses are checked
 * at every attempt, since DNS may answer otherwise then.
 */
function checkUrl(url: string, config: Config): void {
  const refused = urlRefusal(url, policyOf(config.webhooks));
  if (refused) invalid('/body/url', refused);
}

/**
 * A tenant has at most webhooks.max_endpoints_per_tenant live endpoints (plan limits may lower it
 * later): every delivery of an event is one job per endpoint, so the bound is what one tenant can
 * put on the queue per event. Creates of one tenant take turns on a transaction-scoped advisory
 * lock, so two at once cannot both pass at the limit's last place. A restore bringing a deleted
 * endpoint back counts as a create.
 */
async function refusePastLimit(ctx: TxContext, limit: number): Promise<void> {
  await ctx.db
    .selectNoFrom((eb) =>
      eb
        .fn('pg_advisory_xact_lock', [
          eb.fn('hashtextextended', [eb.val(`webhook-endpoints:${ctx.tenant.id}`), eb.lit(0)]),
        ])
        .as('locked'),
    )
    .execute();
  const { live } = await ctx.db
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll<string>().as('live'))
    .where('deleted_at', 'is', null)
    .executeTakeFirstOrThrow();
  if (Number(live) >= limit)
    throw problem(
      'LIMIT_REACHED',
      `This tenant has ${limit} webhook endpoints, the most it may have (webhooks.max_endpoints_per_tenant); delete one first`,
      { extensions: { limit, setting: 'webhooks.max_endpoints_per_tenant' } },
    );
}

const rotateSecret = command({
  summary: 'Replace the signing secret',
  admin: {
    label: 'New signing secret',
    intro:
      'Makes a new signing secret and shows it once. The old one keeps working for a while, so the receiving system can switch.',
    fields: {
      overlapHours: {
        label: 'Old secret keeps working for',
        hint: 'Hours, from 0 to 168 (a week). Leave empty for 24.',
      },
    },
  },
  description:
    'Makes a new signing secret and answers it once, as signingSecret. The old secret keeps signing alongside it for overlapHours (default 24; 0 ends it at once): every delivery in that time carries both signatures in Webhook-Signature, so receivers can switch without losing a delivery. Publishes webhook.endpoint.secret_rotated (the id only).',
  body: Type.Object(
    {
      overlapHours: Type.Optional(
        Type.Integer({ minimum: 0, maximum: 168, description: 'Hours both secrets sign (0 to 168, default 24).' }),
      ),
    },
    { additionalProperties: false },
  ),
  publishes: [SECRET_ROTATED],
  async run(ctx, row, body) {
    const current = await ctx.db
      .selectFrom('webhook_endpoints')
      .select('secret')
      .where('id', '=', row.id)
      .executeTakeFirstOrThrow();
    const secret = generateSecret();
    const overlapMs = (body.overlapHours ?? 24) * 3600_000;
    await ctx.db
      .updateTable('webhook_endpoints')
      .set({
        secret,
        previous_secret: overlapMs > 0 ? current.secret : null,
        previous_secret_until: overlapMs > 0 ? new Date(ctx.now.getTime() + overlapMs) : null,
      })
      .where('id', '=', row.id)
      .execute();
    reveal(ctx, row.id, { signingSecret: secret });
    ctx.publish(SECRET_ROTATED, { id: row.id });
  },
});

const sendTestEvent = command({
  summary: 'Send a test event to the endpoint',
  admin: {
    label: 'Send a test event',
    intro: 'Sends one test event, to check that the receiving system gets it. It shows in the delivery log.',
  },
  description:
    'Queues one delivery of a webhook.test event (data: the endpoint id) to this endpoint, active or not, and answers the endpoint with deliveryId: the id its first attempt takes in the delivery log (GET /api/v1/webhook/deliveries lists it once the attempt has ended; send-again takes it).',
  publishes: [TEST_REQUESTED],
  async run(ctx, row) {
    // The first attempt's log id, made here so the answer can name it; the fan-out passes it on.
    const deliveryId = uuidv7(ctx.now.getTime());
    ctx.publish(TEST_REQUESTED, { id: row.id, deliveryId });
    reveal(ctx, row.id, { deliveryId });
  },
});

const sendAgain = command({
  summary: 'Send a logged delivery again',
  admin: {
    label: 'Send again',
    intro: 'Sends a delivery from the log again.',
    fields: {
      deliveryId: {
        label: 'Delivery',
        hint: 'The delivery to send again, from the delivery log.',
        messages: { format: 'Choose a delivery from the log.', required: 'Choose a delivery from the log.' },
      },
    },
  },
  description:
    'Queues the message of a delivery in this endpoint’s log again (same Webhook-Id, type, time and data; a fresh timestamp and signature), with retries of its own. An id that is not in this endpoint’s log is 404 NOT_FOUND.',
  body: Type.Object(
    { deliveryId: Type.String({ format: 'uuid', description: 'An id from GET /api/v1/webhook/deliveries.' }) },
    { additionalProperties: false },
  ),
  publishes: [REDELIVERY_REQUESTED],
  async run(ctx, row, body) {
    const logged = await ctx.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('id', '=', body.deliveryId)
      .where('endpoint_id', '=', row.id)
      .executeTakeFirst();
    if (!logged) throw problem('NOT_FOUND', 'no such delivery in this endpoint’s log');
    ctx.publish(REDELIVERY_REQUESTED, { id: row.id, deliveryId: logged.id });
  },
});

/**
 * A tenant's webhook endpoint: the events it wants are POSTed to its URL, signed with its secret
 * (docs/webhooks.md). The secret lives in columns no response carries; it is shown once, in the
 * answer of the create and of rotate-secret.
 */
export const endpoint = defineEntity({
  module: 'webhook',
  name: 'endpoint',
  label: 'Webhook endpoint',
  description:
    'A URL that receives the tenant’s events, signed per the Standard Webhooks specification. The signing secret is made by the service and answered once, as signingSecret, by the create and by rotate-secret. A tenant has at most webhooks.max_endpoints_per_tenant live endpoints (20 unless configured): a create past it is 409 LIMIT_REACHED, with the limit in the problem’s limit member.',
  fields: endpointFields,
  computed: {
    signingSecret: Secret(
      Type.Union([Type.String(), Type.Null()], {
        description:
          'The signing secret (whsec_…): only in the answer of the create and of rotate-secret, null in every other; keep it, no read shows it again. A secret shown once: a replay of either answer (the same Idempotency-Key) has null here and names /signingSecret in its header Idempotent-Secrets-Withheld.',
      }),
    ),
    deliveryId: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], {
      description:
        'Only in the answer of send-test-event: the id the test delivery’s first attempt takes in the delivery log (GET /api/v1/webhook/deliveries, once it has ended; send-again takes it). Null in every other answer.',
    }),
  },
  permissions: { read: 'webhook:manage', write: 'webhook:manage' },
  // Endpoints are a feature of the plan, and each new one counts against its limit.
  feature: 'webhook.endpoints',
  limit: 'webhook.endpoints',
  createProblems: {
    409: 'The tenant already has webhooks.max_endpoints_per_tenant live endpoints (LIMIT_REACHED; the problem’s limit member gives the number)',
  },
  sortable: ['url'],
  storage: {
    table: 'webhook_endpoints',
    columns: {
      secret: 'text',
      previous_secret: 'text',
      previous_secret_until: 'timestamptz',
      failing_since: 'timestamptz',
    },
  },
  commands: { 'rotate-secret': rotateSecret, 'send-test-event': sendTestEvent, 'send-again': sendAgain },
  hooks: {
    async beforeWrite(ctx, { op, values, revives, config }) {
      if (values.url !== undefined) checkUrl(values.url, config);
      if (op === 'create' || revives) await refusePastLimit(ctx, config.webhooks.max_endpoints_per_tenant);
    },
    async afterWrite(ctx, { op, row }) {
      if (op !== 'create') return;
      const secret = generateSecret();
      await ctx.db.updateTable('webhook_endpoints').set({ secret }).where('id', '=', row.id).execute();
      reveal(ctx, row.id, { signingSecret: secret });
    },
    afterRead(ctx, row) {
      const shown = revealed.get(ctx)?.get(row.id);
      return { ...row, signingSecret: shown?.signingSecret ?? null, deliveryId: shown?.deliveryId ?? null };
    },
  },
  admin: {
    title: 'url',
    columns: ['url', 'description', 'events', 'active'],
    // The events a person ticks: the declared ones, grouped by module, and "*" for all of them.
    choices: { events: { from: 'events', all: { value: ALL_EVENTS, label: 'All events, also kinds added later' } } },
    // The secret is in the create's and rotate-secret's answers only: the shell shows it there, once.
    shownOnce: ['signingSecret'],
    fieldText: endpointFieldText,
  },
});
