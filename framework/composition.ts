import type { ModuleDefinition } from './entity/define.ts';
import { Registry } from './entity/registry.ts';
import { BootCheckError, checkRegistry, readingSafely } from './entity/checks.ts';
import { EntityOperations } from './operations/entity-ops.ts';
import { entityRoutes } from './http/entity-routes.ts';
import { idempotencyKeyPurge } from './http/idempotency.ts';
import { historyRetention } from './history/retention.ts';
import type { Config } from './config/schema.ts';
import { installProblems } from './errors.ts';
import { deriveUniqueKeys } from './db/unique-keys.ts';
import { entityUniqueKeys } from './entity/unique-keys.ts';
import { installEventPayloads } from './events/payload-schemas.ts';
import type { RegisteredJob, RegisteredRoute } from './contracts/composition.ts';
import { declaredSource, entitySource, type LiveSource } from './live/sources.ts';
import { streamRoute } from './live/stream-route.ts';
import { defaultEntitlementProblems } from './entitlements/checks.ts';

/** Jobs the framework runs itself, on the tables it owns in every tenant. */
const FRAMEWORK_JOBS = [idempotencyKeyPurge, historyRetention];

/** Each entity's generic operations, by entity key: one instance per entity, shared by its routes and by code acting on its rows. */
export class EntityOperationsDirectory {
  private readonly byKey: ReadonlyMap<string, EntityOperations>;

  constructor(byKey: ReadonlyMap<string, EntityOperations>) {
    this.byKey = byKey;
  }

  of(key: string): EntityOperations {
    const found = this.byKey.get(key);
    if (!found) throw new Error(`no entity ${key}`);
    return found;
  }
}

/** What app.ts builds from the declarations before anything touches the database. */
export interface Composition {
  /** The declarations, resolved. */
  registry: Registry;
  /** Every route: each entity's generic and command routes, then the modules' own. */
  routes: readonly RegisteredRoute[];
  /** The job schedule: the framework's own jobs (its tables are every tenant's), then the modules'. */
  jobs: readonly RegisteredJob[];
  operations: EntityOperationsDirectory;
  /** The lists clients may follow live (framework/live): each generated list of a tenant's entity, then the modules' declared ones. */
  live: readonly LiveSource[];
}

/**
 * Composes the service from the modules' declarations: the registry (declarations only), each
 * entity's operations and routes, and the job schedule; then runs the boot checks over all of it
 * (entity/checks.ts), refusing to start on any inconsistency, and installs the modules' problem
 * codes (framework/errors.ts).
 */
export function compose(modules: readonly ModuleDefinition[], config: Config): Composition {
  let registry: Registry;
  try {
    registry = new Registry(modules, config);
  } catch (err) {
    throw new BootCheckError(
      `startup checks failed:\n- ${
        readingSafely('the modules', () => {
          throw err;
        })[0]
      }`,
    );
  }
  // What fails while an entity's operations and routes are composed from its declaration is a
  // problem the checks list beside the others, naming the entity (boot checks never throw).
  const problems: string[] = [];
  const composing = (key: string, step: () => void) => {
    problems.push(
      ...readingSafely(`entity ${key}`, () => {
        step();
        return [];
      }),
    );
  };
  const operations = new Map<string, EntityOperations>();
  for (const entity of registry.entities)
    composing(entity.names.key, () => {
      operations.set(entity.names.key, new EntityOperations(entity, { config }));
      // Its unique keys, from storage.unique: a write meeting one answers 409 in the declared words.
      deriveUniqueKeys(entityUniqueKeys(entity));
    });
  // Once every entity has its operations, each one's references reach the entities they name (a
  // query filters through and expands them); then the routes, whose schemas show the expansions.
  const targetOf = (key: string) => operations.get(key)?.asTarget();
  for (const [key, ops] of operations) composing(key, () => ops.connect(targetOf));
  const routes: RegisteredRoute[] = [];
  const live: LiveSource[] = [];
  // Module by module, as declared: its entities' routes (each list's stream after them), then its
  // own and its declared streams (the OpenAPI document's order).
  const entities = registry.entities.values();
  for (const module of registry.modules) {
    for (const _ of module.entities ?? []) {
      const entity = entities.next().value!;
      const ops = operations.get(entity.names.key);
      if (!ops) continue;
      composing(entity.names.key, () => {
        const own = entityRoutes(entity, ops, config).map((route) => ({ module: module.name, route, entity }));
        const source = entitySource(entity, ops);
        routes.push(...own, ...(source ? [{ module: module.name, route: streamRoute(source) }] : []));
        if (source) live.push(source);
      });
    }
    routes.push(...registry.moduleRoutes.filter((r) => r.module === module.name));
    for (const definition of module.streams ?? []) {
      const source = declaredSource(definition);
      live.push(source);
      routes.push({ module: module.name, route: streamRoute(source) });
    }
  }
  const jobs = [...FRAMEWORK_JOBS.map((j) => ({ ...j, module: 'framework' })), ...registry.moduleJobs];
  // What a tenant without a plan gets names declared features and limits (config.yaml).
  problems.push(...defaultEntitlementProblems(registry, config.billing.default_entitlements));
  checkRegistry(registry, { routes, jobs, problems });
  installEventPayloads(registry.eventPayloads);
  // The modules' problem codes, now known to be declared once: what ProblemError and the admin shell read.
  for (const module of registry.modules) if (module.problems) installProblems(module.name, module.problems);
  return { registry, routes, jobs, operations: new EntityOperationsDirectory(operations), live };
}
