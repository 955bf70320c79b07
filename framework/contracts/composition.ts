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
 * What the registry holds of the definitions, added to `ModuleRegistry` (contracts/services.ts)
 * by declaration merging. Services sit below the definitions (a hook receives Services), and the
 * registry holds the definitions: this file, above both, completes the type, so the files import
 * one way only.
 */
declare module './services.ts' {
  interface ModuleRegistry {
    readonly modules: readonly ModuleDefinition[];
    readonly entities: readonly ResolvedEntity[];
    readonly routes: readonly RegisteredRoute[];
    readonly subscriptions: readonly (SubscriptionDefinition & { module: string })[];
    readonly jobs: readonly (JobDefinition & { module: string })[];
    readonly queues: readonly (QueueDefinition & { module: string })[];
    entity(key: string): ResolvedEntity;
    /** The generic operations of an entity, for modules that act on another module's rows. */
    ops(key: string): EntityOperationsApi;
  }
}

export interface RegisteredRoute {
  module: string;
  route: AnyRoute;
  /** Present for the generic and command routes of an entity. */
  entity?: ResolvedEntity;
}
