import { creationOrder, ROWS_PER_ENTITY } from './entity-rows.ts';
import { entityCreateBody } from './operations.ts';
import type { World } from './world.ts';

/**
 * Makes ROWS_PER_ENTITY rows of every collection entity in every tenant of the world (a global
 * entity's at the operator), through its create route as the tenant's admin, each body derived
 * from the entity's declarations and naming the world's rows it references: made in reference
 * order, so a referenced row is there first. The sqlmap target's world gets its rows the same way.
 */
export async function addEntityRows(world: World): Promise<void> {
  for (const entity of creationOrder()) {
    const homes = entity.scope === 'global' ? [world.operator] : [...new Set(world.tenants)];
    for (const tenant of homes) {
      const rows: Record<string, unknown>[] = [];
      for (let i = 0; i < ROWS_PER_ENTITY; i++) {
        const res = await world.must(
          {
            operationId: entity.names.operationId('create'),
            method: 'POST',
            host: tenant.host,
            path: entity.names.path,
            cookie: tenant.admin.cookie,
            json: entityCreateBody(entity, world, tenant),
          },
          201,
        );
        rows.push(res.json!);
      }
      (entity.scope === 'global' ? world.globalRows : tenant.entityRows).set(entity.names.key, rows);
    }
  }
}
