import Type from 'typebox';
import './webhook-tables.ts';
import { defineCommand, defineEntity } from '../../framework/entity/define.ts';
import { problem } from '../../framework/errors.ts';
import type { TxContext } from '../../framework/entity/define.ts';
import { endpointFieldText, endpointFields } from './endpoint.fields.ts';
import { generateSecret } from './signing.ts';
import { ALL_EVENTS, REDELIVERY_REQUESTED, SECRET_ROTATED, TEST_REQUESTED } from './webhook-events.ts';

const command = defineCommand(endpointFields);

/**
 * A secret made in this transaction, shown in this transaction's answer only (the create's, or
 * rotate-secret's): afterRead adds it as signingSecret; no later read carries it.
 */
const revealed = new WeakMap<TxContext, Map<string, string>>();
function reveal(ctx: TxContext, id: string, secret: string): void {
  const shown = revealed.get(ctx) ?? new Map<string, string>();
  shown.set(id, secret);
  revealed.set(ctx, shown);
}

function invalid(pointer: string, message: string): never {
  throw problem('VALIDATION_FAILED', `${pointer.slice('/body/'.length)}: ${message}`, {
    errors: [{ pointer, message }],
  });
}

/** An http(s) URL with a host and no credentials; whether http is allowed and where it points are checked at delivery. */
function checkUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    invalid('/body/url', 'not a URL');
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') invalid('/body/url', 'an http(s) URL is needed');
  if (parsed.username || parsed.password)
    invalid('/body/url', 'a URL with a user name or password is not accepted; put a token in its path or query');
  if (!parsed.hostname) invalid('/body/url', 'the URL has no host');
}

function checkEvents(ctx: TxContext, events: readonly string[]): void {
  events.forEach((name, i) => {
    if (name !== ALL_EVENTS && !ctx.declaredEvents.has(name))
      invalid(`/body/events/${i}`, `no event ${name} is published; use a published event name or "*"`);
  });
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
    reveal(ctx, row.id, secret);
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
    'Queues one delivery of a webhook.test event (data: the endpoint id) to this endpoint, active or not; it shows in the delivery log like any other.',
  publishes: [TEST_REQUESTED],
  async run(ctx, row) {
    ctx.publish(TEST_REQUESTED, { id: row.id });
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
    'A URL that receives the tenant’s events, signed per the Standard Webhooks specification. The signing secret is made by the service and answered once, as signingSecret, by the create and by rotate-secret.',
  fields: endpointFields,
  computed: {
    signingSecret: Type.Union([Type.String(), Type.Null()], {
      description:
        'The signing secret (whsec_…): only in the answer of the create and of rotate-secret, null in every other; keep it, no read shows it again.',
    }),
  },
  permissions: { read: 'webhook:manage', write: 'webhook:manage' },
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
    async beforeWrite(ctx, { values }) {
      if (values.url !== undefined) checkUrl(values.url);
      if (values.events !== undefined) checkEvents(ctx, values.events);
    },
    async afterWrite(ctx, { op, row }) {
      if (op !== 'create') return;
      const secret = generateSecret();
      await ctx.db.updateTable('webhook_endpoints').set({ secret }).where('id', '=', row.id).execute();
      reveal(ctx, row.id, secret);
    },
    afterRead(ctx, row) {
      const secret = revealed.get(ctx)?.get(row.id);
      return { ...row, signingSecret: secret ?? null };
    },
  },
  admin: { title: 'url', columns: ['url', 'description', 'events', 'active'], fieldText: endpointFieldText },
});
