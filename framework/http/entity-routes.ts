import type { AnyRoute } from '../entity/define.ts';
import type { ResolvedEntity } from '../entity/resolve.ts';
import { EntityOperations } from '../operations/entity-ops.ts';
import {
  NoContent,
  answer,
  clearing,
  commandRoutes,
  deleteDescription,
  followUpEvents,
  presentAll,
  presenter,
  selecting,
  sentences,
  visibility,
} from './entity-route-parts.ts';
import { singletonRoutes } from './singleton-routes.ts';
import { publicReadRoute } from './public-read.ts';
import { publicPageRoute } from './public-page.ts';
import { OFFSET_MAX, TOTAL_CAP, type PageQuery } from '../operations/paging.ts';
import { CONDITIONS_MAX } from '../query/parse.ts';
import { SUMMARY_GROUPS_MAX } from '../query/summary.ts';
import { admitReferences, selectAnswer } from '../query/expansion.ts';
import { historyRoutes } from '../history/history-routes.ts';
import { importRoute } from '../bulk/imports/import-routes.ts';
import { entityExport } from '../bulk/list-export/entity-export.ts';
import type { Config } from '../config/schema.ts';

/**
 * The five generic routes and one route per command (a singleton's routes instead, for a
 * singleton) and the declared public read, as plain route definitions: they go through the same registration, guard,
 * validation and OpenAPI path as hand-written routes.
 */
export function entityRoutes(entity: ResolvedEntity, ops: EntityOperations, config: Config): AnyRoute[] {
  const routes = ungatedRoutes(entity, ops, config);
  const { feature, limit } = entity.def;
  // A whole entity gated by a feature: each of its routes a caller signs in for (a public read stays public).
  const gated =
    feature === undefined
      ? routes
      : routes.map((route) => (route.access === 'public' || route.feature ? route : { ...route, feature }));
  // A limited entity: every write in the request's transaction but a delete may take the tenant past
  // the limit (the create, PATCH, PUT, restore and commands: EntityOperations). An import's rows are
  // refused in its job, not by its route.
  const counts = (route: AnyRoute) =>
    route.method !== 'GET' && route.method !== 'DELETE' && route.transaction !== 'none' && route.access !== 'public';
  return limit === undefined
    ? gated
    : gated.map((route) => (counts(route) ? { ...route, entitlements: { ...route.entitlements, limit } } : route));
}

function ungatedRoutes(entity: ResolvedEntity, ops: EntityOperations, config: Config): AnyRoute[] {
  const present = presenter(entity);
  if (entity.singleton) return singletonRoutes(entity, ops, present);
  const { names, schemas, def } = entity;
  const read = { permission: def.permissions.read };
  const write = { permission: def.permissions.write };
  const tags = [def.module];
  const itemPath = `${names.path}/:id`;
  const events = names.events;
  const hookEvents = followUpEvents(entity);
  // Decided once, from the entity's declarations: a route without oneExchange never tries it.
  const single = ops.exchangeKinds;

  const routes: AnyRoute[] = [
    {
      method: 'GET',
      url: names.path,
      operationId: names.operationId('list'),
      // Lists stay on the primary unless the caller sends Prefer: replica (eventually consistent).
      replica: 'on-request',
      summary: `List ${names.labelPlural.toLowerCase()}`,
      description: sentences(
        `Filtered by <field>=<operator>.<value> on any filterable field (all conditions hold; or=(...) for one group of which one holds; at most ${CONDITIONS_MAX} conditions), sorted by one or several fields (sort=a,-b; "-" for descending), ties broken by id. Paged with limit and offset (up to ${OFFSET_MAX}), or with after=<next> from the previous page at any depth; next is null on the last page. total counts the matching rows up to ${TOTAL_CAP} (totalExact false past that). fields= keeps only the fields named; expand= carries a referenced row in each item. docs/api-conventions.md, "Filters". ?format=csv or Accept: text/csv (ndjson, application/x-ndjson) answers every matching row instead of a page, as a download streamed in batches (docs/api-conventions.md, "Exports").`,
        visibility(entity),
      ),
      tags,
      access: read,
      schema: {
        querystring: schemas.listQuery,
        response: { 200: answer(schemas.list, `A page of ${names.labelPlural.toLowerCase()}`) },
      },
      // Its cursors are sealed for the request's tenant, as the handler's page seals them (paging.ts).
      ...(single.list
        ? {
            oneExchange: ({ query, request, reply, services }) => {
              const asked = ops.parse(query, services.clock.now());
              const place = { tenantId: request.tenant!.id, cursors: services.cursors };
              return selecting(ops.listExchange(query as PageQuery, place, asked), reply, asked);
            },
          }
        : {}),
      // Accept: text/csv or ?format=csv (and NDJSON): every matching row, streamed (bulk/list-export/).
      exports: entityExport(entity, ops, present),
      handler: async ({ tx, query, reply }) => {
        const asked = ops.parse(query, tx.now);
        const page = await ops.list(tx, query as PageQuery, undefined, asked);
        const items = def.hooks?.afterRead
          ? ((await presentAll(present, tx, page.items)) as Record<string, unknown>[])
          : (page.items as Record<string, unknown>[]);
        await ops.expand(tx, items, asked);
        return selectAnswer(reply, { ...page, items }, asked);
      },
    },
    {
      method: 'GET',
      url: `${names.path}/summary`,
      operationId: names.operationId('summary'),
      // Counts for a dashboard or a report: the replica serves them when there is one (within its lag bound).
      replica: 'always',
      summary: `Count ${names.labelPlural.toLowerCase()} per group`,
      description: sentences(
        `Counts the rows the list would answer (the same filters, q and or), per group of the fields groupBy names (groupBy=status,priority; a date-time by day, week or month, deadline:day, in UTC or the IANA zone tz names), with sum, avg, min and max of numeric and date-time fields (sum=price). total counts every matching row; at most ${SUMMARY_GROUPS_MAX} groups, truncated true when there are more. One statement, bounded by database.statement_timeout_ms. docs/api-conventions.md, "Summaries".`,
        visibility(entity),
      ),
      tags,
      access: read,
      schema: {
        querystring: ops.summaryQuery,
        response: { 200: answer(ops.summarySchema, `Counts of ${names.labelPlural.toLowerCase()} per group`) },
      },
      handler: ({ tx, query }) => ops.summary(tx, query as Record<string, unknown>),
    },
    {
      method: 'POST',
      url: names.path,
      operationId: names.operationId('create'),
      summary: `Create a ${names.label.toLowerCase()}`,
      tags,
      access: write,
      ...(def.createProblems ? { problems: def.createProblems } : {}),
      publishes: [...new Set([events.created, ...hookEvents])],
      idempotent: true,
      schema: {
        body: schemas.create,
        response: { 201: answer(schemas.row, `The ${names.label.toLowerCase()} created`) },
      },
      ...(single.create
        ? {
            oneExchange: ({ body, request, reply, services }) =>
              ops.createExchange(body as Record<string, unknown>, services.clock.now(), request.tenant!.id, (row) => {
                reply.code(201).header('location', `${names.path}/${row.id}`);
                return row;
              }),
          }
        : {}),
      handler: async ({ tx, body, reply }) => {
        const row = await ops.create(tx, body as Record<string, unknown>);
        reply.code(201).header('location', `${names.path}/${row.id}`);
        return present(tx, row);
      },
    },
    {
      method: 'GET',
      url: itemPath,
      operationId: names.operationId('read'),
      replica: 'on-request',
      summary: `Read a ${names.label.toLowerCase()}`,
      description: sentences(visibility(entity)),
      tags,
      access: read,
      schema: {
        params: schemas.idParams,
        querystring: schemas.readQuery,
        response: { 200: answer(schemas.row, `The ${names.label.toLowerCase()}`) },
      },
      ...(single.read
        ? {
            oneExchange: ({ params, query, reply, services }) => {
              const asked = ops.parse(query, services.clock.now());
              return selecting(ops.readExchange((params as { id: string }).id, asked), reply, asked);
            },
          }
        : {}),
      handler: async ({ tx, params, query, reply }) => {
        const asked = ops.parse(query, tx.now);
        admitReferences(asked, (permission) => tx.can(permission));
        const row = (await present(tx, await ops.read(tx, (params as { id: string }).id))) as Record<string, unknown>;
        await ops.expand(tx, [row], asked);
        return selectAnswer(reply, row, asked);
      },
    },
    {
      method: 'PATCH',
      url: itemPath,
      operationId: names.operationId('update'),
      summary: `Update a ${names.label.toLowerCase()}`,
      description: sentences(
        entity.immutable.length ? `Immutable fields: ${entity.immutable.join(', ')}.` : undefined,
        clearing(entity),
        visibility(entity),
      ),
      tags,
      access: write,
      publishes: [...new Set([events.updated, ...hookEvents])],
      schema: {
        params: schemas.idParams,
        body: schemas.patch,
        response: { 200: answer(schemas.row, `The ${names.label.toLowerCase()} as updated`) },
      },
      handler: async ({ tx, params, body }) =>
        present(tx, await ops.update(tx, (params as { id: string }).id, body as Record<string, unknown>)),
    },
    {
      method: 'DELETE',
      url: itemPath,
      operationId: names.operationId('delete'),
      summary: `Delete a ${names.label.toLowerCase()}`,
      description: sentences(deleteDescription(entity), visibility(entity)),
      tags,
      access: write,
      publishes: [events.deleted, ...(def.hookPublishes ?? [])],
      schema: { params: schemas.idParams, response: { 204: NoContent } },
      handler: async ({ tx, params, reply }) => {
        await ops.remove(tx, (params as { id: string }).id);
        reply.code(204);
        return null;
      },
    },
  ];

  routes.push(...commandRoutes(entity, ops, present));
  routes.push(...historyRoutes(entity, ops, present));
  // The list's import (framework/bulk/imports/), bounded by the installation's upload limit.
  const importing = importRoute(entity, config);
  if (importing) routes.push(importing);
  const publicRead = publicReadRoute(entity, (values) => ops.toRow(values));
  if (publicRead) routes.push(publicRead);
  const publicPage = publicPageRoute(entity, (values) => ops.toRow(values));
  if (publicPage) routes.push(publicPage);
  return routes;
}

export { EntityOperations };
