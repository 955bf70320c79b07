import type { AnyRoute } from '../entity/define.ts';
import type { ResolvedEntity } from '../entity/resolve.ts';
import type { EntityOperations } from '../operations/entity-ops.ts';
import type { TxContext } from '../context/tx.ts';
import {
  NoContent,
  answer,
  clearing,
  commandRoutes,
  deleteDescription,
  followUpEvents,
  sentences,
} from './entity-route-parts.ts';
import { historyRoutes } from '../history/history-routes.ts';

type Present = (tx: TxContext, row: Record<string, unknown>) => unknown;

/**
 * A singleton's routes, all at /api/v1/<module>/<name> with no id: GET (404 until the tenant's
 * row exists), PUT, PATCH and DELETE only when declared in singletonRoutes, and POST
 * .../<command> per command, which may create the row.
 */
export function singletonRoutes(entity: ResolvedEntity, ops: EntityOperations, present: Present): AnyRoute[] {
  const { names, schemas, def } = entity;
  const label = names.label.toLowerCase();
  const tags = [def.module];
  const write = { permission: def.permissions.write };
  const followUp = followUpEvents(entity);
  const declared = new Set(def.singletonRoutes ?? []);

  const routes: AnyRoute[] = [
    {
      method: 'GET',
      url: names.path,
      operationId: names.operationId('read'),
      summary: `Read the ${label}`,
      description: `One per tenant. 404 NOT_FOUND until it exists.`,
      tags,
      access: { permission: def.permissions.read },
      schema: { response: { 200: answer(schemas.row, `The ${label}`) } },
      handler: async ({ tx }) => present(tx, await ops.read(tx, null)),
    },
  ];
  if (declared.has('replace')) {
    routes.push({
      method: 'PUT',
      url: names.path,
      operationId: names.operationId('replace'),
      summary: `Create or replace the ${label}`,
      description: `Sends every writable field; an optional field left out is cleared. 201 when it created the ${label}, 200 when it replaced it.${
        entity.immutable.length
          ? ` Immutable fields (${entity.immutable.join(', ')}) may be repeated, not changed.`
          : ''
      }`,
      tags,
      access: write,
      publishes: [...new Set([names.events.created, names.events.updated, ...followUp])],
      schema: {
        body: schemas.create,
        response: {
          200: answer(schemas.row, `The ${label} as replaced`),
          201: answer(schemas.row, `The ${label} created`),
        },
      },
      handler: async ({ tx, body, reply }) => {
        const { row, created } = await ops.replace(tx, body as Record<string, unknown>);
        reply.code(created ? 201 : 200);
        return present(tx, row);
      },
    });
  }
  if (declared.has('update')) {
    routes.push({
      method: 'PATCH',
      url: names.path,
      operationId: names.operationId('update'),
      summary: `Update the ${label}`,
      description: sentences(
        '404 NOT_FOUND until it exists.',
        entity.immutable.length ? `Immutable fields: ${entity.immutable.join(', ')}.` : undefined,
        clearing(entity),
      ),
      tags,
      access: write,
      publishes: [...new Set([names.events.updated, ...followUp])],
      schema: { body: schemas.patch, response: { 200: answer(schemas.row, `The ${label} as updated`) } },
      handler: async ({ tx, body }) => present(tx, await ops.update(tx, null, body as Record<string, unknown>)),
    });
  }
  if (declared.has('delete')) {
    routes.push({
      method: 'DELETE',
      url: names.path,
      operationId: names.operationId('delete'),
      summary: `Delete the ${label}`,
      description: deleteDescription(entity),
      tags,
      access: write,
      publishes: [names.events.deleted, ...(def.hookPublishes ?? [])],
      schema: { response: { 204: NoContent } },
      handler: async ({ tx, reply }) => {
        await ops.remove(tx, null);
        reply.code(204);
        return null;
      },
    });
  }
  routes.push(...commandRoutes(entity, ops, present));
  routes.push(...historyRoutes(entity, ops, present));
  return routes;
}
