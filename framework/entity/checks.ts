import Type, { type TSchema } from 'typebox';
import type { Registry } from './registry.ts';
import type { RegisteredJob, RegisteredRoute } from '../contracts/composition.ts';
import type { ResolvedEntity } from './resolve.ts';
import { SYSTEM_FIELDS } from './resolve.ts';
import type { TxContext } from '../context/tx.ts';
import { SYSTEM_ACTOR } from '../context/actor.ts';
import type { AnyEntity } from './define.ts';
import { hasDateTimeFormat, isDeclaredDateTime } from './date-time.ts';
import { isCurrencySchema, moneyFields } from './money.ts';
import { isReservedName, RESERVED_NAMES } from '../query/query-model.ts';
import { referenceName } from '../operations/entity-query.ts';
import { BootCheckError } from './boot-check-error.ts';
import { referenceProblems } from './references.ts';
import { isSecret } from './secret-field.ts';
import { snakeCase } from './names.ts';

export { BootCheckError } from './boot-check-error.ts';

import { entitlementProblems } from '../entitlements/checks.ts';
/**
 * The startup checks every role runs, over the declarations and what was composed from them (the
 * routes, the job schedule): what types cannot catch is caught here, before serving. Each failure
 * names its offender.
 */
export function checkRegistry(
  registry: Registry,
  composed: { routes: readonly RegisteredRoute[]; jobs: readonly RegisteredJob[]; problems?: readonly string[] },
): void {
  const problems = [
    ...registry.conflicts,
    ...(composed.problems ?? []),
    ...entitlementProblems(registry, composed.routes),
  ];
  const permissionKnown = (name: string) => name === '*' || registry.permissions.has(name);

  const moduleNames = new Set<string>();
  // One module names people in the admin header (the one that keeps their names): two would disagree.
  const namers = registry.modules.filter((m) => m.adminPerson).map((m) => m.name);
  if (namers.length > 1) problems.push(`modules ${namers.join(' and ')} both provide adminPerson: at most one may`);
  for (const module of registry.modules) {
    if (moduleNames.has(module.name)) problems.push(`module ${module.name} is registered twice`);
    if (!NAME.test(module.name)) problems.push(`module ${JSON.stringify(module.name)}: its name ${NAME_RULE}`);
    // The framework's migrations are kept under that owner: a module's files would be taken for its.
    if (module.name === 'framework')
      problems.push(`module framework: the name is the framework's own (the owner of migrations/framework/)`);
    for (const [code, declaration] of Object.entries(module.problems ?? {})) {
      if (!PROBLEM_CODE.test(code))
        problems.push(
          `module ${module.name}: problem code ${JSON.stringify(code)} is not UPPER_SNAKE (PLAN_IN_USE), so no description can name it`,
        );
      const { status } = declaration as { status: unknown };
      if (!Number.isInteger(status) || (status as number) < 400 || (status as number) > 599)
        problems.push(
          `module ${module.name}: problem code ${code} has status ${String(status)}: a refusal is a 4xx or a 5xx`,
        );
    }
    moduleNames.add(module.name);
    for (const [role, permissions] of Object.entries(module.defaultRoles ?? {})) {
      for (const p of permissions) {
        if (!permissionKnown(p))
          problems.push(`default role ${role} of module ${module.name} names undeclared permission ${p}`);
      }
    }
    const ownEvents = new Set(registry.eventsByModule.get(module.name) ?? []);
    for (const [event, field] of Object.entries(module.operatorEventsAbout ?? {})) {
      if (!ownEvents.has(event))
        problems.push(`module ${module.name}: operatorEventsAbout names ${event}, which is not one of its events`);
      if (typeof field !== 'string' || field === '')
        problems.push(`module ${module.name}: operatorEventsAbout ${event} names no payload field`);
    }
  }

  for (const entity of registry.entities) {
    // A declaration of an unexpected shape (e.g. from data, or cast past the types) is reported, not thrown.
    problems.push(...readingSafely(`entity ${entity.names.key}`, () => entityProblems(entity)));
  }

  function entityProblems(entity: ResolvedEntity): string[] {
    const problems: string[] = [];
    const { def } = entity;
    for (const p of [def.permissions.read, def.permissions.write]) {
      if (!permissionKnown(p)) problems.push(`entity ${entity.names.key} uses undeclared permission ${p}`);
    }
    const commands = def.commands ?? {};
    for (const [field, owners] of Object.entries(entity.commandOwners)) {
      if (!Object.hasOwn(def.fields, field))
        problems.push(`entity ${entity.names.key}: command-owned field ${field} is not a field`);
      if (owners.length === 0)
        problems.push(`entity ${entity.names.key}: command-owned field ${field} names no command`);
      for (const command of owners) {
        if (!Object.hasOwn(commands, command)) {
          problems.push(
            `entity ${entity.names.key}: field ${field} is owned by command ${command}, which is not declared`,
          );
        }
      }
    }
    problems.push(...shapeProblems(entity, (p) => registry.permissions.get(p)?.operator === true));
    for (const [field, schema] of Object.entries(def.fields)) {
      problems.push(...integerBoundProblems(`entity ${entity.names.key}: integer field ${field}`, schema));
      if (hasDateTimeFormat(schema) && !isDeclaredDateTime(schema)) {
        problems.push(
          `entity ${entity.names.key}: date-time field ${field} must be declared with DateTime(), so its rows are typed as the Dates PostgreSQL returns`,
        );
      }
    }
    for (const event of def.hookPublishes ?? []) {
      if (!registry.events.has(event))
        problems.push(`entity ${entity.names.key}: hookPublishes names undeclared event ${event}`);
    }
    problems.push(...publicReadProblems(entity.names.key, def));
    problems.push(...queryProblems(entity));
    problems.push(...fieldNameProblems(entity));
    problems.push(...pathNameProblems(entity));
    // History's routes sit beside the commands': <item>/history and <item>/restore.
    if (def.history !== false) {
      for (const name of ['history', 'restore'])
        if (Object.hasOwn(commands, name))
          problems.push(
            `entity ${entity.names.key}: command ${name} would take the history route's path; rename it, or declare history: false`,
          );
    }
    problems.push(
      ...referenceProblems(
        def,
        registry.entities.map((e) => e.def),
      ),
    );
    problems.push(...stateProblems(entity, registry));
    problems.push(...codeProblems(entity, registry));
    problems.push(...actorProblems(entity, registry, permissionKnown));
    // The types refuse these already; a definition built without them (e.g. from data) is caught here.
    for (const [kind, list] of [
      ['readOnly', entity.readOnly],
      ['immutable', entity.immutable],
      ['sortable', def.sortable ?? []],
      ['admin column', [...(def.admin?.title !== undefined ? [def.admin.title] : []), ...(def.admin?.columns ?? [])]],
      ['readOnlyReasons', Object.keys(def.readOnlyReasons ?? {})],
      ['normalise', Object.keys(def.normalise ?? {})],
      ['invalidCodes', Object.keys(def.invalidCodes ?? {})],
      ['uniqueCodes', Object.keys(def.uniqueCodes ?? {})],
      ['eventFields', def.eventFields ?? []],
      ['storage.unique', (def.storage?.unique ?? []).map((u) => (typeof u === 'string' ? u : u.field))],
      ['admin.references', Object.keys(def.admin?.references ?? {})],
      ['searchable', def.searchable ?? []],
      ['states', def.states ? [def.states.field] : []],
      ['history.exclude', def.history ? (def.history.exclude ?? []) : []],
      ['admin.choices', Object.keys(def.admin?.choices ?? {})],
      ['indexes', (def.indexes ?? []).flat().filter((f) => f !== 'createdAt' && f !== 'updatedAt')],
    ] as const) {
      for (const field of list) {
        if (!Object.hasOwn(def.fields, field))
          problems.push(`entity ${entity.names.key}: ${kind} field ${field} is not a field`);
      }
    }
    for (const field of def.admin?.shownOnce ?? [])
      if (!Object.hasOwn(def.computed ?? {}, field))
        problems.push(`entity ${entity.names.key}: admin.shownOnce field ${field} is not a computed field`);
    return problems;
  }

  const operationIds = new Map<string, string>();
  const endpoints = new Set<string>();
  for (const { module, route } of composed.routes) {
    const where = `${route.method} ${route.url} (module ${module})`;
    if (typeof route.access === 'object' && !permissionKnown(route.access.permission)) {
      problems.push(`route ${where} uses undeclared permission ${route.access.permission}`);
    }
    const previous = operationIds.get(route.operationId);
    if (previous) problems.push(`operation id ${route.operationId} is used by ${previous} and ${where}`);
    operationIds.set(route.operationId, where);
    const endpoint = `${route.method} ${route.url}`;
    if (endpoints.has(endpoint)) problems.push(`route ${endpoint} is declared twice`);
    endpoints.add(endpoint);
    for (const event of route.publishes ?? []) {
      if (!registry.events.has(event)) problems.push(`route ${where} publishes undeclared event ${event}`);
    }
    if (route.replica && (route.method !== 'GET' || (route.publishes ?? []).length > 0 || route.idempotent)) {
      problems.push(
        `route ${where} may read from the replica: it must be a GET that publishes nothing, as a replica refuses every write`,
      );
    }
    for (const code of documentedCodes(route.problems)) {
      if (!registry.problems.has(code))
        problems.push(
          `route ${where} documents problem code ${code}, which no module declares (ModuleDefinition.problems)`,
        );
    }
    if ('multipart' in route && route.multipart && route.transaction !== 'none') {
      problems.push(
        `route ${where} is multipart: it must declare transaction 'none', as an upload streams with no transaction open`,
      );
    }
  }

  const subscriptionNames = new Set<string>();
  for (const subscription of registry.subscriptions) {
    // '*' (EVERY_EVENT) subscribes to every event.
    if (subscription.event !== '*' && !registry.events.has(subscription.event)) {
      problems.push(
        `subscription ${subscription.name} (module ${subscription.module}) listens to undeclared event ${subscription.event}`,
      );
    }
    if (subscriptionNames.has(subscription.name)) problems.push(`subscription ${subscription.name} is declared twice`);
    subscriptionNames.add(subscription.name);
    const filter = subscription.onlyTenantsWith;
    if (filter) {
      const owner = registry.entities.find((e) => e.names.table === filter.table);
      if (!owner || owner.module !== subscription.module || owner.scope !== 'tenant') {
        problems.push(
          `subscription ${subscription.name} (module ${subscription.module}): onlyTenantsWith names ${filter.table}, which is not a tenant-owned entity table of module ${subscription.module}`,
        );
      }
    }
  }
  const jobNames = new Set<string>();
  for (const job of composed.jobs) {
    if (jobNames.has(job.name)) problems.push(`job ${job.name} is declared twice`);
    jobNames.add(job.name);
  }
  for (const { kind, name, module, publishes } of [
    ...registry.subscriptions.map((s) => ({ kind: 'subscription', ...s })),
    ...composed.jobs.map((j) => ({ kind: 'job', ...j })),
  ]) {
    for (const event of publishes ?? []) {
      if (!registry.events.has(event))
        problems.push(`${kind} ${name} (module ${module}) publishes undeclared event ${event}`);
    }
  }

  // A declared event nothing publishes and nobody listens to is a leftover or a typo.
  const used = new Set<string>([
    ...composed.routes.flatMap(({ route }) => route.publishes ?? []),
    ...registry.entities.flatMap((e) => e.def.hookPublishes ?? []),
    ...registry.subscriptions.flatMap((s) => [s.event, ...(s.publishes ?? [])]),
    ...composed.jobs.flatMap((j) => j.publishes ?? []),
  ]);
  // (Skipped where an entity's routes could not be composed: their publishes are unknown.)
  for (const module of (composed.problems ?? []).length > 0 ? [] : registry.modules) {
    for (const event of module.events ?? []) {
      if (!used.has(event)) {
        problems.push(
          `event ${event} of module ${module.name} is neither in any publishes list (route, command, hookPublishes, subscription, job) nor listened to by a subscription`,
        );
      }
    }
  }

  if (problems.length > 0) {
    throw new BootCheckError(`startup checks failed:\n- ${problems.join('\n- ')}`);
  }
}

/**
 * A check's problems, or, where the declaration is not of the shape its type says and the check
 * fails on it, one line naming the declaration and what to do: boot checks report, never throw.
 */
export function readingSafely(where: string, check: () => readonly string[]): readonly string[] {
  try {
    return check();
  } catch (err) {
    return [
      `${where}: its declaration could not be read (${err instanceof Error ? err.message : String(err)}); give it the shape its type declares (framework/entity/define.ts)`,
    ];
  }
}

/**
 * An integer field states its range: its column is an integer (int4) within ±2^31, a bigint past
 * it, so an unbounded one would refuse 3,000,000,000 with no pointer at the field. Bounds up to
 * ±(2^53 − 1) (Number.MAX_SAFE_INTEGER: what a JSON number holds exactly) make it a bigint.
 */
function integerBoundProblems(where: string, schema: TSchema): string[] {
  const node = (Type.IsOptional(schema) ? { ...schema } : schema) as {
    type?: unknown;
    enum?: unknown;
    minimum?: number;
    maximum?: number;
    exclusiveMinimum?: number;
    exclusiveMaximum?: number;
  };
  const integer = node.type === 'integer' || (Array.isArray(node.type) && node.type.includes('integer'));
  if (!integer || node.enum !== undefined) return [];
  const missing = [
    ...(node.minimum === undefined && node.exclusiveMinimum === undefined ? ['minimum'] : []),
    ...(node.maximum === undefined && node.exclusiveMaximum === undefined ? ['maximum'] : []),
  ];
  const past = [node.minimum, node.maximum, node.exclusiveMinimum, node.exclusiveMaximum].some(
    (b) => b !== undefined && Math.abs(b) > Number.MAX_SAFE_INTEGER,
  );
  const problems: string[] = [];
  if (missing.length > 0)
    problems.push(
      `${where} declares no ${missing.join(' or ')}: declare its range, e.g. Type.Integer({ minimum: 0, maximum: 2147483647 }) for an integer column, or up to ±9007199254740991 (Number.MAX_SAFE_INTEGER) for a bigint`,
    );
  if (past)
    problems.push(
      `${where} has a bound past ±9007199254740991 (Number.MAX_SAFE_INTEGER), which a JSON number cannot hold exactly: keep its range within it`,
    );
  return problems;
}

const SINGLETON_ROUTES = new Set(['replace', 'update', 'delete']);

// A problem code as a description names it: UPPER_SNAKE (PLAN_IN_USE) or the Err prefix (ErrCredentials).
const CODE_IN_TEXT = /\b(?:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|Err[A-Z][A-Za-z0-9]*)\b/g;

/** The problem codes a route's (or a command's) own problem answers name in their descriptions. */
export function documentedCodes(problems: Readonly<Record<number, string>> | undefined): string[] {
  return [...new Set(Object.values(problems ?? {}).flatMap((text) => text.match(CODE_IN_TEXT) ?? []))];
}

/** The codes an entity answers with instead of the generic ones (states.refusal, invalidCodes, uniqueCodes) are declared. */
function codeProblems(entity: ResolvedEntity, registry: Registry): string[] {
  const { def } = entity;
  const named: [string, string][] = [
    ...(def.states ? [['states.refusal', def.states.refusal] as [string, string]] : []),
    ...Object.entries(def.invalidCodes ?? {}).map(([field, code]): [string, string] => [
      `invalidCodes.${field}`,
      String(code),
    ]),
    ...Object.entries(def.uniqueCodes ?? {}).map(([field, key]): [string, string] => [
      `uniqueCodes.${field}`,
      String(key?.code),
    ]),
  ];
  return named
    .filter(([, code]) => !registry.problems.has(code))
    .map(
      ([where, code]) =>
        `entity ${entity.names.key}: ${where} names problem code ${code}, which no module declares (ModuleDefinition.problems)`,
    );
}

/**
 * Scope, singleton and delete options that contradict each other or the permissions: a global
 * entity is written only by the operator, so its write permission and every command's must be
 * operator permissions; a singleton is one row per tenant, so it cannot be global.
 */
function shapeProblems(entity: ResolvedEntity, isOperator: (permission: string) => boolean): string[] {
  const { def, names } = entity;
  const problems: string[] = [];
  if (def.scope !== undefined && def.scope !== 'tenant' && def.scope !== 'global')
    problems.push(`entity ${names.key}: scope ${String(def.scope)} is neither tenant nor global`);
  const deleteMode = def.storage?.deleteMode;
  if (deleteMode !== undefined && deleteMode !== 'soft' && deleteMode !== 'hard')
    problems.push(`entity ${names.key}: storage.deleteMode ${String(deleteMode)} is neither soft nor hard`);
  if (entity.scope === 'global') {
    if (!isOperator(def.permissions.write)) {
      problems.push(
        `entity ${names.key} is global: its write permission ${def.permissions.write} is not an operator permission`,
      );
    }
    for (const [command, definition] of Object.entries(def.commands ?? {})) {
      const permission = definition.permission ?? def.permissions.write;
      if (!isOperator(permission))
        problems.push(
          `entity ${names.key} is global: command ${command} uses ${permission}, which is not an operator permission`,
        );
    }
    if (entity.singleton)
      problems.push(`entity ${names.key} is global and a singleton: a singleton is one row per tenant`);
  }
  if (!entity.singleton && def.singletonRoutes !== undefined)
    problems.push(`entity ${names.key} declares singletonRoutes but is not a singleton`);
  for (const route of def.singletonRoutes ?? []) {
    if (!SINGLETON_ROUTES.has(route))
      problems.push(`entity ${names.key}: singleton route ${String(route)} is not one of replace, update, delete`);
  }
  for (const field of entity.computed) {
    if (Object.hasOwn(def.fields, field) || (SYSTEM_FIELDS as readonly string[]).includes(field))
      problems.push(`entity ${names.key}: computed field ${field} is already a field`);
  }
  for (const [amount, currency] of Object.entries(moneyFields(def.fields))) {
    if (!isCurrencySchema(def.fields[currency]))
      problems.push(
        `entity ${names.key}: Money field ${amount} takes its currency from ${currency}, which is ${Object.hasOwn(def.fields, currency) ? 'not a currency field' : 'no field'}: declare ${currency}: Currency() beside it`,
      );
  }
  if (def.rowAccess) problems.push(...rowAccessProblems(entity));
  return problems;
}

/**
 * rowAccess is synchronous, a mapping from the caller to field values, so it can be asked at boot
 * with no caller (as a job would): the fields it names must be fields. It must answer there too,
 * with null values (which match no row) rather than throwing.
 */
function rowAccessProblems(entity: ResolvedEntity): string[] {
  const noCaller: TxContext = {
    tenant: { id: '00000000-0000-0000-0000-000000000000', slug: 'boot-check', isOperator: false },
    db: undefined as never,
    session: null,
    actorId: null,
    actor: SYSTEM_ACTOR,
    declaredEvents: new Set(),
    now: new Date(0),
    publish: () => {
      throw new Error('rowAccess may not publish');
    },
    can: () => false,
    onRollback: () => {
      throw new Error('rowAccess may not schedule work');
    },
    afterCommit: () => {
      throw new Error('rowAccess may not schedule work');
    },
  };
  let filter: Record<string, unknown>;
  try {
    filter = entity.def.rowAccess!(noCaller) as Record<string, unknown>;
  } catch (err) {
    return [
      `entity ${entity.names.key}: rowAccess fails with no caller (${(err as Error).message}); answer null values instead`,
    ];
  }
  return Object.keys(filter)
    .filter((field) => !Object.hasOwn(entity.def.fields, field))
    .map((field) => `entity ${entity.names.key}: rowAccess names ${field}, which is not a field`);
}

/** The public read names a required field of the entity, and `where` names fields. */
function publicReadProblems(key: string, def: AnyEntity): string[] {
  const spec = def.publicRead;
  if (!spec) return [];
  const problems: string[] = [];
  const schema = def.fields[spec.by];
  if (!schema) problems.push(`entity ${key}: publicRead looks up by ${spec.by}, which is not a field`);
  else if (Type.IsOptional(schema)) {
    problems.push(
      `entity ${key}: publicRead looks up by ${spec.by}, which is optional: a lookup field must be required (and unique)`,
    );
  }
  for (const field of Object.keys(spec.where ?? {})) {
    if (!Object.hasOwn(def.fields, field))
      problems.push(`entity ${key}: publicRead where names ${field}, which is not a field`);
  }
  if (spec.path !== undefined && !/^[a-z0-9-]+(\/[a-z0-9-]+)*$/.test(spec.path)) {
    problems.push(`entity ${key}: publicRead path ${spec.path} is not lower-case path segments`);
  }
  return problems;
}

/**
 * A command's actor fields (CommandDefinition.actors): each a field of its body, a reference to
 * the users entity (the identity table users, whose status and roles the check reads), with a
 * declared permission.
 */
function actorProblems(entity: ResolvedEntity, registry: Registry, permissionKnown: (p: string) => boolean): string[] {
  const problems: string[] = [];
  // The entity on the framework's identity table users (access/identity-tables.ts), if a module declares one.
  const usersEntity = registry.entities.find((e) => e.names.table === 'users');
  for (const [command, definition] of Object.entries(entity.def.commands ?? {})) {
    const where = `entity ${entity.names.key}: command ${command}`;
    for (const [field, permission] of Object.entries(definition.actors ?? {})) {
      const properties = (definition.body as { properties?: Record<string, unknown> } | undefined)?.properties ?? {};
      if (!Object.hasOwn(properties, field)) problems.push(`${where}: actor field ${field} is not a field of its body`);
      const target = definition.references?.[field];
      if (!usersEntity || target !== usersEntity.names.key)
        problems.push(
          `${where}: actor field ${field} must be a reference to the users entity${usersEntity ? ` (references: { ${field}: '${usersEntity.names.key}' })` : ', and no entity reads the identity table users'}`,
        );
      if (!permissionKnown(permission))
        problems.push(`${where}: actor field ${field} names undeclared permission ${permission}`);
    }
  }
  return problems;
}

/**
 * The declared state table (command-states.ts): every state a command or a create names is a value
 * of the state field, the refusal is a 409, and no command declares states without a state field.
 */
function stateProblems(entity: ResolvedEntity, registry: Registry): string[] {
  const { def } = entity;
  const problems: string[] = [];
  const where = `entity ${entity.names.key}`;
  const field = def.states?.field;
  const schema =
    field === undefined
      ? undefined
      : (def.fields[field] as { anyOf?: { const?: unknown }[]; enum?: unknown[] } | undefined);
  const values =
    schema?.enum?.map(String) ?? schema?.anyOf?.filter((b) => b.const !== undefined).map((b) => String(b.const));
  const refusal = def.states ? registry.problems.get(def.states.refusal) : undefined;
  if (def.states && refusal && refusal.status !== 409)
    problems.push(`${where}: states.refusal ${def.states.refusal} is not a 409`);
  if (field !== undefined && (!values || values.length === 0))
    problems.push(`${where}: state field ${field} is not a union of literals`);
  const known = (kind: string, list: readonly string[]) => {
    for (const state of list)
      if (values && !values.includes(state))
        problems.push(`${where}: ${kind} names ${state}, which ${field} cannot hold`);
  };
  known('states.initial', def.states?.initial ?? []);
  const overdue = def.admin?.overdue;
  if (overdue) {
    const instant = def.fields[overdue.field];
    if (!instant || !hasDateTimeFormat(instant))
      problems.push(`${where}: admin.overdue.field ${overdue.field} is not a date-time field`);
    if (overdue.except?.length && !def.states)
      problems.push(`${where}: admin.overdue.except names states, but the entity declares no state field`);
    known('admin.overdue.except', overdue.except ?? []);
  }
  for (const [name, command] of Object.entries(def.commands ?? {})) {
    if (!command.states) continue;
    if (!def.states)
      problems.push(`${where}: command ${name} declares states, but the entity declares no state field (states.field)`);
    const list = (key: 'from' | 'unchanged'): readonly string[] => {
      const given = command.states![key];
      if (given === undefined && key === 'unchanged') return [];
      if (Array.isArray(given)) return given;
      problems.push(
        `${where}: command ${name} states.${key} is not a list of states; declare the states it acts in, e.g. states: { from: ['draft'] }`,
      );
      return [];
    };
    known(`command ${name} states`, [
      ...list('from'),
      ...list('unchanged'),
      ...(command.states.to === undefined ? [] : [command.states.to]),
    ]);
  }
  return problems;
}

/**
 * What a list's query may name must leave the query's own parameters alone and name what exists:
 * no field, computed field or reference takes a reserved name (limit, offset, sort, after, q, or,
 * fields, expand, format); `filterable` and the list page's `admin.filters.fields` name fields the
 * list filters by; a reference's query name is no
 * field's, and a declared one belongs to a declared reference.
 */
function queryProblems(entity: ResolvedEntity): string[] {
  const { def, names } = entity;
  const where = `entity ${names.key}`;
  const problems: string[] = [];
  const own = new Set([...SYSTEM_FIELDS, ...entity.fields, ...entity.computed]);
  for (const name of [...entity.fields, ...entity.computed]) {
    if (isReservedName(name))
      problems.push(
        `${where}: field ${name} has a name a list's query reserves for its own parameters (${RESERVED_NAMES.join(', ')}); rename it`,
      );
  }
  for (const name of def.filterable ?? []) {
    if (!(SYSTEM_FIELDS as readonly string[]).includes(name) && !Object.hasOwn(def.fields, name))
      problems.push(`${where}: filterable field ${name} is not a field`);
  }
  // The list page's filter controls name fields the list filters by (framework/admin/list-filters.ts).
  const filterable = new Set<string>(def.filterable ?? [...SYSTEM_FIELDS, ...Object.keys(def.fields)]);
  for (const name of def.admin?.filters?.fields ?? []) {
    if (!filterable.has(name))
      problems.push(`${where}: admin.filters.fields names ${name}, which the list does not filter by`);
  }
  for (const field of Object.keys(def.referenceNames ?? {})) {
    if (!Object.hasOwn(def.admin?.references ?? {}, field))
      problems.push(`${where}: referenceNames names ${field}, which is no reference`);
  }
  const taken = new Map<string, string>();
  for (const field of Object.keys(def.admin?.references ?? {})) {
    const name = referenceName(entity, field);
    if (name === undefined) continue;
    if (own.has(name))
      problems.push(
        `${where}: reference ${field} is named ${name} in queries, which is a field's name; declare another in referenceNames`,
      );
    if (isReservedName(name))
      problems.push(`${where}: reference ${field} is named ${name} in queries, a name the query reserves`);
    const earlier = taken.get(name);
    if (earlier) problems.push(`${where}: references ${earlier} and ${field} are both named ${name} in queries`);
    taken.set(name, field);
  }
  return problems;
}

// The columns every entity table carries besides its fields' (framework/db/entity-table.ts).
const FRAMEWORK_COLUMNS = ['id', 'tenant_id', 'created_at', 'updated_at', 'deleted_at'];

/**
 * A field's name is its own: not a framework column's (its column would be the framework's, and a
 * body could write it), not an Object.prototype member's (a lookup by name would find the member
 * on any object), no other field's column; and a Secret() field is never sorted, filtered or
 * searched by (a list answering by its value would tell it, row by row).
 */
function fieldNameProblems(entity: ResolvedEntity): string[] {
  const { def, names } = entity;
  const where = `entity ${names.key}`;
  const problems: string[] = [];
  const columns = new Map<string, string>();
  for (const field of Object.keys(def.fields)) {
    const column = snakeCase(field);
    if (FRAMEWORK_COLUMNS.includes(column))
      problems.push(`${where}: field ${field} takes the framework's column ${column}; rename it`);
    const earlier = columns.get(column);
    if (earlier !== undefined) problems.push(`${where}: fields ${earlier} and ${field} both take the column ${column}`);
    columns.set(column, field);
  }
  for (const field of [...Object.keys(def.fields), ...Object.keys(def.computed ?? {})]) {
    if (field in Object.prototype)
      problems.push(`${where}: field ${field} is named like a member every object has (Object.prototype); rename it`);
  }
  for (const [kind, list] of [
    ['sortable', def.sortable ?? []],
    ['filterable', def.filterable ?? []],
    ['searchable', def.searchable ?? []],
  ] as const) {
    for (const field of list) {
      if (Object.hasOwn(def.fields, field) && isSecret(def.fields[field]))
        problems.push(
          `${where}: ${kind} names the Secret() field ${field}: a secret is never sorted, filtered or searched by`,
        );
    }
  }
  return problems;
}

// A module's problem code as a description names it (CODE_IN_TEXT): UPPER_SNAKE, or the Err prefix.
const PROBLEM_CODE = /^(?:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*|Err[A-Z][A-Za-z0-9]*)$/;

// What names a path segment, an operation id, a table and a schema: ASCII, starting lower-case.
const NAME = /^[a-z][a-zA-Z0-9]*$/;
const SEGMENT = /^[a-z][a-zA-Z0-9]*(?:-[a-zA-Z0-9]+)*$/;
const NAME_RULE = 'must be ASCII letters and digits, starting with a lower-case letter (orderLine)';
const SEGMENT_RULE =
  'must be ASCII letters and digits in words joined by single hyphens, starting with a lower-case letter (order-lines)';

/** The entity's name, plural and commands name its paths, operation ids and table: each a plain ASCII name. */
function pathNameProblems(entity: ResolvedEntity): string[] {
  const { def } = entity;
  const where = `entity ${entity.names.key}`;
  const problems: string[] = [];
  if (!NAME.test(def.name)) problems.push(`${where}: its name ${JSON.stringify(def.name)} ${NAME_RULE}`);
  if (def.plural !== undefined && !SEGMENT.test(def.plural))
    problems.push(`${where}: its plural ${JSON.stringify(def.plural)} ${SEGMENT_RULE}`);
  for (const command of Object.keys(def.commands ?? {}))
    if (!SEGMENT.test(command)) problems.push(`${where}: command ${JSON.stringify(command)} ${SEGMENT_RULE}`);
  return problems;
}
