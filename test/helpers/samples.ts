import type { Services, TenantRef, TxContext } from '../../framework/entity/define.ts';
import { allModules } from '../../modules/index.ts';

/**
 * Test samples: values the conformance suite, the admin page suites and the security suite merge
 * into the bodies they derive from an entity's schemas, for a field no schema can describe (a
 * reference that must name an existing row, a command body naming a plan to subscribe to). They
 * are test data, so they live here, registered by entity key, and never in a module
 * (test/framework/samples-in-tests.test.ts).
 */
export interface EntitySamples {
  /** Values merged into a create body; runs in the tenant's transaction, n varies between calls so unique keys stay unique. */
  create?(ctx: TxContext, n: number): Promise<Record<string, unknown>>;
  /** Values merged into a command's body; runs in the transaction of the tenant the command is sent to. */
  command?(ctx: TxContext, command: string, n: number): Promise<Record<string, unknown>>;
}

const samples = new Map<string, EntitySamples>();

/** Registers the samples of one entity (a test module's own entities register theirs the same way). */
export function registerSamples(entityKey: string, entitySamples: EntitySamples): void {
  if (samples.has(entityKey)) throw new Error(`samples of ${entityKey} are registered twice`);
  samples.set(entityKey, entitySamples);
}

/** The entity keys that have samples. */
export const entitiesWithSamples = (): string[] => [...samples.keys()];

/** What to merge into a create body of the entity ({} when it needs nothing). */
export async function createSample(
  services: Services,
  tenant: TenantRef,
  entityKey: string,
  n: number,
): Promise<Record<string, unknown>> {
  const create = samples.get(entityKey)?.create;
  return create ? services.transactions.run(tenant, (ctx) => create(ctx, n)) : {};
}

/** What to merge into a command's body ({} when it needs nothing). */
export async function commandSample(
  services: Services,
  tenant: TenantRef,
  entityKey: string,
  command: string,
  n: number,
): Promise<Record<string, unknown>> {
  const run = samples.get(entityKey)?.command;
  return run ? services.transactions.run(tenant, (ctx) => run(ctx, command, n)) : {};
}

// The installation's entities.

// A subscription needs a plan to subscribe to: the suites subscribe to a free plan of their own,
// which grants every feature the modules declare, so that the entities the suites reach after
// subscribing (a feature-gated one among them) are not refused by the plan.
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
