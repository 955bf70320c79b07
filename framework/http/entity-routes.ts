import Type, { type TSchema } from 'typebox';
import type { AnyRoute } from '../entity/define.ts';
import type { ResolvedEntity } from '../entity/resolve.ts';
import { EntityOperations } from '../operations/entity-ops.ts';
import { OFFSET_MAX, TOTAL_CAP, type PageQuery } from '../operations/paging.ts';

const NoContent = Type.Null({ description: 'No content' });

/** The same schema, with the sentence OpenAPI shows for this answer. */
const answer = (schema: TSchema, description: string): TSchema => ({ ...schema, 'x-response-description': description }) as TSchema;

/**
 * The five generic routes and one route per command, as plain route definitions: they go through
 * the same registration, guard, validation and OpenAPI path as hand-written routes.
 */
export function entityRoutes(entity: ResolvedEntity): AnyRoute[] {
  const ops = new EntityOperations(entity);
  const { names, schemas, def } = entity;
  const read = { permission: def.permissions.read };
  const write = { permission: def.permissions.write };
  const tags = [def.module];
  const itemPath = `${names.path}/:id`;
  const events = names.events;
  const hookEvents = def.hookPublishes ?? [];

  const routes: AnyRoute[] = [
    {
      method: 'GET',
      url: names.path,
      operationId: names.operationId('list'),
      summary: `List ${names.labelPlural.toLowerCase()}`,
      description: `Sorted by one field (prefix "-" for descending), ties broken by id. Paged with limit and offset (up to ${OFFSET_MAX}), or with after=<next> from the previous page at any depth; next is null on the last page. total counts the rows up to ${TOTAL_CAP} (totalExact false past that).`,
      tags,
      access: read,
      schema: { querystring: schemas.listQuery, response: { 200: answer(schemas.list, `A page of ${names.labelPlural.toLowerCase()}`) } },
      handler: ({ tx, query }) => ops.list(tx, query as PageQuery),
    },
    {
      method: 'POST',
      url: names.path,
      operationId: names.operationId('create'),
      summary: `Create a ${names.label.toLowerCase()}`,
      tags,
      access: write,
      publishes: [events.created, ...hookEvents],
      schema: { body: schemas.create, response: { 201: answer(schemas.row, `The ${names.label.toLowerCase()} created`) } },
      handler: async ({ tx, body, reply }) => {
        const row = await ops.create(tx, body as Record<string, unknown>);
        reply.code(201).header('location', `${names.path}/${row.id}`);
        return row;
      },
    },
    {
      method: 'GET',
      url: itemPath,
      operationId: names.operationId('read'),
      summary: `Read a ${names.label.toLowerCase()}`,
      tags,
      access: read,
      schema: { params: schemas.idParams, response: { 200: answer(schemas.row, `The ${names.label.toLowerCase()}`) } },
      handler: ({ tx, params }) => ops.read(tx, (params as { id: string }).id),
    },
    {
      method: 'PATCH',
      url: itemPath,
      operationId: names.operationId('update'),
      summary: `Update a ${names.label.toLowerCase()}`,
      description: entity.immutable.length ? `Immutable fields: ${entity.immutable.join(', ')}.` : undefined,
      tags,
      access: write,
      publishes: [events.updated, ...hookEvents],
      schema: { params: schemas.idParams, body: schemas.patch, response: { 200: answer(schemas.row, `The ${names.label.toLowerCase()} as updated`) } },
      handler: ({ tx, params, body }) => ops.update(tx, (params as { id: string }).id, body as Record<string, unknown>),
    },
    {
      method: 'DELETE',
      url: itemPath,
      operationId: names.operationId('delete'),
      summary: `Delete a ${names.label.toLowerCase()}`,
      description: 'Soft delete: the row is kept but no longer listed, read, updated or commanded; its unique keys are released.',
      tags,
      access: write,
      publishes: [events.deleted, ...hookEvents],
      schema: { params: schemas.idParams, response: { 204: NoContent } },
      handler: async ({ tx, params, reply }) => {
        await ops.softDelete(tx, (params as { id: string }).id);
        reply.code(204);
        return null;
      },
    },
  ];

  for (const [command, definition] of Object.entries(def.commands ?? {})) {
    routes.push({
      method: 'POST',
      url: `${names.path}/:id/${command}`,
      operationId: names.operationId(command),
      summary: definition.summary,
      description: definition.description,
      tags,
      access: { permission: definition.permission ?? def.permissions.write },
      publishes: [...(definition.publishes ?? []), ...hookEvents],
      schema: {
        params: schemas.idParams,
        ...(definition.body ? { body: definition.body } : {}),
        response: { 200: answer(schemas.row, `The ${names.label.toLowerCase()} after the command`) },
      },
      handler: ({ tx, params, body, services }) => ops.runCommand(tx, (params as { id: string }).id, command, body ?? {}, services),
    });
  }
  return routes;
}

export { EntityOperations };
