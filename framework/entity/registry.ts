import {
  moduleJobs,
  type AnyRoute,
  type ModuleDefinition,
  type PermissionDeclaration,
  type SubscriptionDefinition,
  type JobDefinition,
  type QueueDefinition,
} from './define.ts';
import { resolveEntity, type ResolvedEntity } from './resolve.ts';
import { entityNames } from './names.ts';
import { withEventNames } from './event-names.ts';
import { entityRoutes } from '../http/entity-routes.ts';
import { EntityOperations } from '../operations/entity-ops.ts';
import { checkRegistry } from './checks.ts';
import type { Config } from '../config/schema.ts';
import { idempotencyKeyPurge } from '../http/idempotency.ts';
import { declaredSources, entitySource, liveEventNames, type LiveSource } from '../live/sources.ts';
import { streamRoute } from '../live/stream-route.ts';

/** Jobs the framework runs itself, on the tables it owns in every tenant. */
const FRAMEWORK_JOBS: readonly JobDefinition[] = [idempotencyKeyPurge];

export interface RegisteredRoute {
  module: string;
  route: AnyRoute;
  /** Present for the generic and command routes of an entity. */
  entity?: ResolvedEntity;
}

/**
 * Everything the modules declared, resolved once and frozen: the single source for routes,
 * OpenAPI, the catalog, the admin shell, the outbox wiring and the job schedule.
 */
export class Registry {
  readonly modules: readonly ModuleDefinition[];
  readonly entities: readonly ResolvedEntity[];
  readonly permissions: ReadonlyMap<string, PermissionDeclaration & { module: string }>;
  readonly events: ReadonlySet<string>;
  readonly routes: readonly RegisteredRoute[];
  readonly subscriptions: readonly (SubscriptionDefinition & { module: string })[];
  readonly jobs: readonly (JobDefinition & { module: string })[];
  readonly queues: readonly (QueueDefinition & { module: string })[];
  /** The lists clients may follow live (framework/live): generated lists of tenant entities, and the modules' declared ones. */
  readonly live: readonly LiveSource[];
  /** The events some stream shows, by name: the relay gives them live positions. */
  readonly liveEvents: ReadonlySet<string>;
  private readonly operations: ReadonlyMap<string, EntityOperations>;

  constructor(modules: readonly ModuleDefinition[], config: Config) {
    this.modules = modules;
    const entities: ResolvedEntity[] = [];
    const permissions = new Map<string, PermissionDeclaration & { module: string }>();
    const events = new Set<string>();
    const routes: RegisteredRoute[] = [];
    const live: LiveSource[] = [];
    const duplicates: string[] = [];
    // One instance per entity, shared by its routes and by modules acting on its rows.
    const operations = new Map<string, EntityOperations>();
    // Every event first, the entities' lifecycle events included: a field taking event names
    // (event-names.ts) gets the whole list as its enum before its entity is resolved.
    for (const module of modules) {
      for (const permission of module.permissions ?? []) {
        if (permissions.has(permission.name)) duplicates.push(`permission ${permission.name} is declared twice`);
        permissions.set(permission.name, { ...permission, module: module.name });
      }
      for (const event of module.events ?? []) events.add(event);
      for (const definition of module.entities ?? [])
        for (const name of Object.values(entityNames(definition).events)) events.add(name);
    }
    for (const module of modules) {
      for (const definition of module.entities ?? []) {
        if (definition.module !== module.name) {
          duplicates.push(
            `entity ${definition.name} declares module ${definition.module} but sits in module ${module.name}`,
          );
        }
        const resolved = resolveEntity(withEventNames(definition, events));
        entities.push(resolved);
        const ops = new EntityOperations(resolved, { config });
        operations.set(resolved.names.key, ops);
        for (const route of entityRoutes(resolved, ops)) routes.push({ module: module.name, route, entity: resolved });
        const source = entitySource(resolved, ops);
        if (source) {
          live.push(source);
          routes.push({ module: module.name, route: streamRoute(source) });
        }
      }
      const declared = typeof module.routes === 'function' ? module.routes(config) : (module.routes ?? []);
      for (const route of declared) routes.push({ module: module.name, route });
      for (const source of declaredSources([module])) {
        live.push(source);
        routes.push({ module: module.name, route: streamRoute(source) });
      }
    }
    this.entities = entities;
    this.permissions = permissions;
    this.events = events;
    this.routes = routes;
    this.subscriptions = modules.flatMap((m) => (m.subscriptions ?? []).map((s) => ({ ...s, module: m.name })));
    // The framework's own jobs first (its tables are every tenant's), then the modules'.
    this.jobs = [
      ...FRAMEWORK_JOBS.map((j) => ({ ...j, module: 'framework' })),
      ...modules.flatMap((m) => moduleJobs(m, config).map((j) => ({ ...j, module: m.name }))),
    ];
    this.queues = modules.flatMap((m) => (m.queues ?? []).map((q) => ({ ...q, module: m.name })));
    this.operations = operations;
    this.live = live;
    this.liveEvents = liveEventNames(live);
    checkRegistry(this, duplicates);
    Object.freeze(this);
  }

  isOperatorPermission(name: string): boolean {
    return this.permissions.get(name)?.operator === true;
  }

  entity(key: string): ResolvedEntity {
    const found = this.entities.find((e) => e.names.key === key);
    if (!found) throw new Error(`no entity ${key}`);
    return found;
  }

  /** The generic operations of an entity, for modules that act on another module's rows. */
  ops(key: string): EntityOperations {
    const found = this.operations.get(key);
    if (!found) throw new Error(`no entity ${key}`);
    return found;
  }
}
