import type { Services, TenantRef, TxContext } from '../../../framework/entity/define.ts';
import { allModules } from '../../../modules/index.ts';

/**
 * Sample overrides: values the suites merge over the bodies they derive from an entity's
 * declarations (test/helpers/samples/derive.ts), for a value no declaration describes (a role name
 * the tenant has, a delivery in an endpoint's log, a plan granting every feature). Optional: an
 * entity needs none unless such a field is in its bodies, so a new module needs no entry here.
 * They are test data, so they live in test/, registered by entity key, and never in a module
 * (test/framework/samples-in-tests.test.ts). Each runs in a transaction of the tenant the request
 * goes to, as the caller who sends it when there is one (ctx.actorId is that person).
 */
export interface EntitySamples {
  /** Values merged into a create body; n varies between calls so unique keys stay unique. */
  create?(ctx: TxContext, n: number): Promise<Record<string, unknown>>;
  /** Values merged into a command's body; `row` is the row the command is sent to (absent for a singleton not created yet). */
  command?(
    ctx: TxContext,
    command: string,
    n: number,
    row: Readonly<Record<string, unknown>> | undefined,
  ): Promise<Record<string, unknown>>;
}

/** Who a sample runs as: the caller's session (its hash, as the session cookie names it), when there is one. */
export interface SampleCaller {
  sessionHash?: Buffer;
}

const samples = new Map<string, EntitySamples>();

/** Registers the samples of one entity (a test module's own entities register theirs the same way). */
export function registerSamples(entityKey: string, entitySamples: EntitySamples): void {
  if (samples.has(entityKey)) throw new Error(`samples of ${entityKey} are registered twice`);
  samples.set(entityKey, entitySamples);
}

/** The entity keys that have samples. */
export const entitiesWithSamples = (): string[] => [...samples.keys()];

const asCaller = (caller: SampleCaller | undefined) =>
  caller?.sessionHash ? { sessionHash: caller.sessionHash } : undefined;

/** What to merge into a create body of the entity ({} when it needs nothing). */
export async function createSample(
  services: Services,
  tenant: TenantRef,
  entityKey: string,
  n: number,
  caller?: SampleCaller,
): Promise<Record<string, unknown>> {
  const create = samples.get(entityKey)?.create;
  return create ? services.transactions.run(tenant, (ctx) => create(ctx, n), asCaller(caller)) : {};
}

/** What to merge into a command's body ({} when it needs nothing). */
export async function commandSample(
  services: Services,
  tenant: TenantRef,
  entityKey: string,
  command: string,
  n: number,
  options: SampleCaller & { row?: Readonly<Record<string, unknown>> } = {},
): Promise<Record<string, unknown>> {
  const run = samples.get(entityKey)?.command;
  return run ? services.transactions.run(tenant, (ctx) => run(ctx, command, n, options.row), asCaller(options)) : {};
}

// The installation's entities.

// A subscription needs a plan to subscribe to: the suites subscribe to a free plan of their own,
// which grants every feature the modules declare, so that the entities the suites reach after
// subscribing (a feature-gated one among them) are not refused by the plan. (The plan the
// reference alone would make grants what a derived plan body names: one feature.)
const EVERY_FEATURE = allModules.flatMap((module) => (module.features ?? []).map((feature) => feature.name));
registerSamples('billing.subscription', {
  async command(ctx, command, n) {
    if (command !== 'subscribe') return {};
    const created = await ctx.db
      .insertInto('plans')
      .values({
        code: `conformance-${n}-${ctx.tenant.id.slice(0, 8)}`,
        name: `Conformance ${n}`,
        price: 0,
        currency: 'EUR',
        interval: 'month',
        active: true,
        features: EVERY_FEATURE,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return { planId: created.id };
  },
});

// A user's roles are names of the tenant's roles, which no declaration of the field says: the
// seeded member role (an unknown name is 422 ROLE_UNKNOWN, test/modules/user/roles.test.ts).
registerSamples('user.user', {
  async command(_ctx, command) {
    return command === 'roles' ? { roles: ['member'] } : {};
  },
});

// Send-again takes a delivery of the endpoint's log, which only the delivery worker writes: one
// failed attempt logged for the endpoint (an id in no log is 404 NOT_FOUND,
// test/modules/webhook/webhook-delivery.test.ts).
registerSamples('webhook.endpoint', {
  async command(ctx, command, n, row) {
    if (command !== 'send-again' || !row) return {};
    // Sent to another tenant's endpoint (which answers 404 there), there is no log to write to.
    const own = await ctx.db
      .selectFrom('webhook_endpoints')
      .select('id')
      .where('id', '=', String(row.id))
      .executeTakeFirst();
    if (!own) return {};
    const logged = await ctx.db
      .insertInto('webhook_deliveries')
      .values({
        endpoint_id: String(row.id),
        message_id: `msg_sample_${n}`,
        event_type: 'webhook.test',
        message_created_at: ctx.now,
        data: { id: row.id },
        attempt: 1,
        status: 'failed',
        http_status: 500,
        duration_ms: 1,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return { deliveryId: logged.id };
  },
});
