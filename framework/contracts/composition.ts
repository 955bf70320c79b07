import type { ResolvedEntity } from './entity.ts';
import type { EntityOperationsApi } from './operations.ts';
import type { AnyRoute } from '../entity/route-definition.ts';
import type {
  JobDefinition,
  ModuleDefinition,
  QueueDefinition,
  SubscriptionDefinition,
} from '../entity/module-definition.ts';

/**
 * What the registry holds of the definitions, and what the composition (framework/composition.ts)
 * builds from them, added to `ModuleRegistry` and `Services` (contracts/services.ts) by
 * declaration merging. Services sit below the definitions (a hook receives Services), and the
 * registry holds the definitions: this file, above both, completes the types, so the files import
 * one way only.
 */
declare module './services.ts' {
  interface ModuleRegistry {
    readonly modules: readonly ModuleDefinition[];
    readonly entities: readonly ResolvedEntity[];
    readonly subscriptions: readonly (SubscriptionDefinition & { module: string })[];
    readonly queues: readonly (QueueDefinition & { module: string })[];
    entity(key: string): ResolvedEntity;
  }

  interface Services {
    /** Every route the service serves, composed from the registry (framework/composition.ts). */
    routes: readonly RegisteredRoute[];
    /** The job schedule: the framework's own jobs, then the modules'. */
    jobs: readonly RegisteredJob[];
    /** Each entity's generic operations, for code that acts on an entity's rows outside its routes. */
    operations: { of(key: string): EntityOperationsApi };
  }
}

export interface RegisteredRoute {
  module: string;
  route: AnyRoute;
  /** Present for the generic and command routes of an entity. */
  entity?: ResolvedEntity;
}

/** A job of the schedule, with the module that declared it ('framework' for the framework's own). */
export type RegisteredJob = JobDefinition & { module: string };
