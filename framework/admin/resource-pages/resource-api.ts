import type { TSchema } from 'typebox';
import type { AnyRoute, RouteDefinition } from '../../entity/define.ts';
import type { ResolvedEntity } from '../../entity/resolve.ts';
import type { ModuleRegistry as Registry, Services } from '../../contracts/services.ts';
import { apiRoute } from '../api-route.ts';

/** A row as the API routes answer it. */
export type Row = Record<string, unknown> & { id: string };

/** The API routes of one entity, by verb: the generated pages run them in the page's transaction. */
export interface Api {
  list: RouteDefinition;
  create: RouteDefinition;
  read: RouteDefinition;
  update: RouteDefinition;
  remove: RouteDefinition;
  commands: { name: string; route: RouteDefinition; body: TSchema | undefined }[];
  /** The record's history and its restore (framework/history/), when the entity keeps history. */
  history?: RouteDefinition;
  restore?: RouteDefinition;
}

/**
 * The entities that get generated pages: every collection of a module that does not opt out with
 * `admin: { resourcePages: false }` (SPEC: files, notifications, tenants; roles have hand-written
 * pages). Singletons (the subscription) have none: they are one row, not a collection.
 */
export function generatedResources(registry: Registry): ResolvedEntity[] {
  const noScreens = new Set(
    registry.modules.filter((module) => module.admin?.resourcePages === false).map((module) => module.name),
  );
  return registry.entities.filter((entity) => !entity.singleton && !noScreens.has(entity.module));
}

const inTransaction = (route: AnyRoute | undefined): route is RouteDefinition =>
  route !== undefined && route.transaction !== 'none';

/** The entity's API routes; undefined when one of the five runs outside a transaction (then it has no pages). */
export function apiOf(services: Services, entity: ResolvedEntity): Api | undefined {
  const of = (verb: string) => apiRoute(services, entity.names.operationId(verb));
  const [list, create, read, update, remove] = ['list', 'create', 'read', 'update', 'delete'].map(of);
  if (
    !inTransaction(list) ||
    !inTransaction(create) ||
    !inTransaction(read) ||
    !inTransaction(update) ||
    !inTransaction(remove)
  )
    return undefined;
  // A command with `prepare` runs outside the page's transaction (a payment first): it has no page.
  const commands = Object.keys(entity.def.commands ?? {}).flatMap((name) => {
    const route = of(name);
    return inTransaction(route) ? [{ name, route, body: route.schema.body }] : [];
  });
  const history = of('history');
  const restore = of('restore');
  return {
    list,
    create,
    read,
    update,
    remove,
    commands,
    ...(inTransaction(history) ? { history } : {}),
    ...(inTransaction(restore) ? { restore } : {}),
  };
}
