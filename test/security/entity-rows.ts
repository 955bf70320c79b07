import { Registry } from '../../framework/entity/registry.ts';
import type { ResolvedEntity } from '../../framework/entity/resolve.ts';
import { allModules } from '../../modules/index.ts';
import { testConfig } from '../helpers/config.ts';
import { createSlots, type DeclaredSlot } from '../helpers/samples/derive.ts';
import type { TenantWorld, World } from './world.ts';

/**
 * The installation's entities as the service resolves them, and the rows of each that the
 * security suite's world holds: what its path parameters and the bodies naming a row are derived
 * from, so an entity a module adds is attacked with no edit here.
 */
export const ENTITIES: readonly ResolvedEntity[] = new Registry(allModules, testConfig()).entities;

/** Rows the world makes of each collection entity in each tenant where it lives: the first is every path's sample, the second fills its lists. */
export const ROWS_PER_ENTITY = 2;

/** The entity whose generated route has this operation id (`task-task-assign`), and the route's verb. */
export function entityOperation(operationId: string): { entity: ResolvedEntity; verb: string } | undefined {
  for (const entity of ENTITIES) {
    const prefix = `${entity.module}-${entity.name}-`;
    if (operationId.startsWith(prefix)) return { entity, verb: operationId.slice(prefix.length) };
  }
  return undefined;
}

/** The world's first row of the entity at the tenant (a global entity's: the one every tenant reads). */
export function rowOf(world: World, tenant: TenantWorld, key: string): Record<string, unknown> {
  const entity = ENTITIES.find((e) => e.names.key === key);
  if (!entity) throw new Error(`no registered entity is ${key}`);
  const rows = entity.scope === 'global' ? world.globalRows.get(key) : tenant.entityRows.get(key);
  const row = rows?.[0];
  if (!row)
    throw new Error(`the world holds no ${key} row at ${tenant.ref.slug}: the rows are made in reference order`);
  return row;
}

/** The values of the declared slots at the tenant: the world's row of a referenced entity, the holder of an actor's permission. */
export function slotValues(slots: readonly DeclaredSlot[], world: World, tenant: TenantWorld): Record<string, unknown> {
  return Object.fromEntries(
    slots.map((slot) => [
      slot.field,
      'actor' in slot
        ? (tenant.holder.get(slot.actor) ?? tenant.admin).userId
        : rowOf(world, tenant, slot.reference).id,
    ]),
  );
}

/** The collection entities, each after the entities its create body names (a global one before any tenant's). */
export function creationOrder(): ResolvedEntity[] {
  const ordered: ResolvedEntity[] = [];
  const visit = (entity: ResolvedEntity, path: string[]) => {
    if (ordered.includes(entity)) return;
    if (path.includes(entity.names.key))
      throw new Error(`references go round: ${[...path, entity.names.key].join(' → ')}`);
    for (const slot of createSlots(entity)) {
      if ('actor' in slot) continue;
      const target = ENTITIES.find((e) => e.names.key === slot.reference);
      if (target) visit(target, [...path, entity.names.key]);
    }
    ordered.push(entity);
  };
  for (const entity of ENTITIES.filter((e) => e.scope === 'global')) visit(entity, []);
  for (const entity of ENTITIES) visit(entity, []);
  return ordered.filter((entity) => !entity.singleton);
}
