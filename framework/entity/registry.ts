import {
  moduleJobs,
  type AnyRoute,
  type JobDefinition,
  type ModuleDefinition,
  type PermissionDeclaration,
  type QueueDefinition,
  type SubscriptionDefinition,
} from './define.ts';
import { resolveEntity, type ResolvedEntity } from './resolve.ts';
import { entityNames } from './names.ts';
import { withEventNames, withFeatureNames } from './event-names.ts';
import { eventPayloadSchemas, moduleEvents } from './module-events.ts';
import type { TSchema } from 'typebox';
import type { Config } from '../config/schema.ts';
import type { ModuleRegistry } from '../contracts/services.ts';
import type { ProblemDeclaration } from '../contracts/problems.ts';
import type { FeatureDeclaration, LimitDeclaration } from '../contracts/entitlements.ts';
import { PROBLEMS } from '../errors.ts';
import { IMPORT_REQUESTED, importQueue, importRequested } from '../bulk/imports/run-import.ts';

/** Events the framework publishes itself: an import handed to the worker (framework/bulk/imports/). */
const FRAMEWORK_EVENTS: readonly string[] = [IMPORT_REQUESTED];
/** The framework's own subscriptions and worker queues: imports run as jobs. */
const FRAMEWORK_SUBSCRIPTIONS: readonly SubscriptionDefinition[] = [importRequested];
const FRAMEWORK_QUEUES: readonly QueueDefinition[] = [importQueue];

/** Permissions the framework declares itself, for the routes it serves on the tables it owns. */
const FRAMEWORK_PERMISSIONS: readonly PermissionDeclaration[] = [
  {
    name: 'audit:read',
    description: "The tenant's activity: GET /api/v1/audit/activity and the admin shell's Activity page",
  },
];

/**
 * Everything the modules declared, resolved once and frozen: declarations only. The routes, the
 * entities' operations and the job schedule are composed from it by framework/composition.ts
 * (app.ts), which also runs the boot checks (entity/checks.ts) over both.
 */
export class Registry implements ModuleRegistry {
  readonly modules: readonly ModuleDefinition[];
  readonly entities: readonly ResolvedEntity[];
  readonly permissions: ReadonlyMap<string, PermissionDeclaration & { module: string }>;
  readonly events: ReadonlySet<string>;
  readonly features: ReadonlyMap<string, FeatureDeclaration & { module: string }>;
  readonly limits: ReadonlyMap<string, LimitDeclaration & { module: string }>;
  /** The plan source of the entitlements, from the module declaring it (ModuleDefinition.planEntitlementsSql). */
  readonly planEntitlementsSql: ((tenant: string) => string) | undefined;
  /** Each module's own events, derived from its publishes lists and declared once (module-events.ts). */
  readonly eventsByModule: ReadonlyMap<string, readonly string[]>;
  /** The events' declared payload schemas (ModuleDefinition.eventPayloads). */
  readonly eventPayloads: ReadonlyMap<string, TSchema>;
  /** The modules' hand-written routes (ModuleDefinition.routes), under this configuration. */
  readonly moduleRoutes: readonly { module: string; route: AnyRoute }[];
  readonly subscriptions: readonly (SubscriptionDefinition & { module: string })[];
  /** The modules' jobs (ModuleDefinition.jobs), under this configuration. */
  readonly moduleJobs: readonly (JobDefinition & { module: string })[];
  readonly queues: readonly (QueueDefinition & { module: string })[];
  /** Every problem code of the installation and who declares it: the framework's own (framework/errors.ts), then each module's (ModuleDefinition.problems). */
  readonly problems: ReadonlyMap<string, ProblemDeclaration & { owner: string }>;
  /** What contradicts itself already while the declarations are gathered (a name declared twice): the boot checks report it. */
  readonly conflicts: readonly string[];

  constructor(modules: readonly ModuleDefinition[], config: Config) {
    this.modules = modules;
    const entities: ResolvedEntity[] = [];
    const permissions = new Map<string, PermissionDeclaration & { module: string }>();
    const events = new Set<string>();
    const features = new Map<string, FeatureDeclaration & { module: string }>();
    const limits = new Map<string, LimitDeclaration & { module: string }>();
    const eventsByModule = new Map<string, readonly string[]>();
    const conflicts: string[] = [];
    const problems = new Map<string, ProblemDeclaration & { owner: string }>(
      Object.entries(PROBLEMS).map(([code, declaration]) => [code, { ...declaration, owner: 'framework' }]),
    );
    for (const permission of FRAMEWORK_PERMISSIONS)
      permissions.set(permission.name, { ...permission, module: 'framework' });
    // Every event first, the entities' lifecycle events included: a field taking event names
    // (event-names.ts) gets the whole list as its enum before its entity is resolved.
    for (const event of FRAMEWORK_EVENTS) events.add(event);
    const planSources = modules.filter((module) => module.planEntitlementsSql !== undefined);
    if (planSources.length > 1)
      conflicts.push(
        `the plan of the entitlements is declared by ${planSources.map((m) => `module ${m.name}`).join(' and ')}`,
      );
    this.planEntitlementsSql = planSources[0]?.planEntitlementsSql;
    for (const module of modules) {
      for (const permission of module.permissions ?? []) {
        if (permissions.has(permission.name)) conflicts.push(`permission ${permission.name} is declared twice`);
        permissions.set(permission.name, { ...permission, module: module.name });
      }
      for (const feature of module.features ?? []) {
        if (features.has(feature.name)) conflicts.push(`feature ${feature.name} is declared twice`);
        features.set(feature.name, { ...feature, module: module.name });
      }
      for (const limit of module.limits ?? []) {
        if (limits.has(limit.name)) conflicts.push(`limit ${limit.name} is declared twice`);
        limits.set(limit.name, { ...limit, module: module.name });
      }
      const own = moduleEvents(module, config);
      eventsByModule.set(module.name, own);
      for (const event of own) events.add(event);
      for (const [code, declaration] of Object.entries(module.problems ?? {})) {
        const earlier = problems.get(code);
        if (earlier)
          conflicts.push(`problem code ${code} is declared by ${earlier.owner} and by module ${module.name}`);
        else problems.set(code, { ...declaration, owner: `module ${module.name}` });
      }
      for (const definition of module.entities ?? [])
        for (const name of Object.values(entityNames(definition).events)) events.add(name);
    }
    for (const module of modules) {
      for (const definition of module.entities ?? []) {
        if (definition.module !== module.name) {
          conflicts.push(
            `entity ${definition.name} declares module ${definition.module} but sits in module ${module.name}`,
          );
        }
        const resolved = resolveEntity(withFeatureNames(withEventNames(definition, events), features.keys()));
        entities.push(resolved);
      }
    }
    this.entities = entities;
    this.permissions = permissions;
    this.events = events;
    this.features = features;
    this.limits = limits;
    this.eventsByModule = eventsByModule;
    this.eventPayloads = eventPayloadSchemas(modules);
    this.moduleRoutes = modules.flatMap((m) =>
      (typeof m.routes === 'function' ? m.routes(config) : (m.routes ?? [])).map((route) => ({
        module: m.name,
        route,
      })),
    );
    this.subscriptions = [
      ...FRAMEWORK_SUBSCRIPTIONS.map((s) => ({ ...s, module: 'framework' })),
      ...modules.flatMap((m) => (m.subscriptions ?? []).map((s) => ({ ...s, module: m.name }))),
    ];
    this.moduleJobs = modules.flatMap((m) => moduleJobs(m, config).map((j) => ({ ...j, module: m.name })));
    this.queues = [
      ...FRAMEWORK_QUEUES.map((q) => ({ ...q, module: 'framework' })),
      ...modules.flatMap((m) => (m.queues ?? []).map((q) => ({ ...q, module: m.name }))),
    ];
    this.problems = problems;
    this.conflicts = conflicts;
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
}
