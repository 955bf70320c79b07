import { randomUUID } from 'node:crypto';
import type { TSchema } from 'typebox';
import type { ResolvedEntity } from '../../framework/entity/resolve.ts';
import { declaredReferences } from '../../framework/entity/references.ts';
import { checkedSample } from '../helpers/samples/values.ts';
import { commandSlots, createSlots, initialState } from '../helpers/samples/derive.ts';
import { ENTITIES, entityOperation, rowOf, slotValues } from './entity-rows.ts';
import type { Sent } from './harness.ts';
import type { TenantWorld, World } from './world.ts';

/** One operation of the live OpenAPI document, as the suite reads it. */
export interface Operation {
  id: string;
  method: string;
  /** The OpenAPI path template, e.g. /api/v1/task/tasks/{id}. */
  path: string;
  /** 'public', 'optional', 'signedIn' or the permission name. */
  access: string;
  permission: string | undefined;
  /** The feature the tenant's plan must grant (`x-feature`), when the operation is gated by one. */
  feature?: string;
  operator: boolean;
  params: Param[];
  body: { contentType: string; schema: TSchema } | undefined;
  stateChanging: boolean;
  /** The operation's security lists bearerAuth: a personal access token authenticates it. */
  bearer: boolean;
}

export interface Param {
  in: 'path' | 'query';
  name: string;
  required: boolean;
  schema: TSchema;
}

interface OpenApi {
  paths: Record<
    string,
    Record<
      string,
      {
        operationId: string;
        'x-access'?: string;
        'x-feature'?: string;
        security?: Record<string, string[]>[];
        parameters?: { in: string; name: string; required?: boolean; schema: TSchema }[];
        requestBody?: { content: Record<string, { schema: TSchema }> };
      }
    >
  >;
}

/** Reads every operation of the document; an operation without `x-access` cannot be classified and fails by name. */
export function readOperations(doc: OpenApi, isOperatorPermission: (p: string) => boolean): Operation[] {
  const out: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const access = op['x-access'];
      if (!access)
        throw new Error(
          `operation ${op.operationId} (${method.toUpperCase()} ${path}) has no x-access: the suite cannot tell who may call it`,
        );
      const permission = access.startsWith('permission ') ? access.slice('permission '.length) : undefined;
      const [contentType, media] = Object.entries(op.requestBody?.content ?? {})[0] ?? [];
      out.push({
        id: op.operationId,
        method: method.toUpperCase(),
        path,
        access: permission ?? access,
        permission,
        ...(op['x-feature'] ? { feature: op['x-feature'] } : {}),
        operator: permission !== undefined && isOperatorPermission(permission),
        params: (op.parameters ?? [])
          .filter((p) => p.in === 'path' || p.in === 'query')
          .map((p) => ({
            in: p.in as 'path' | 'query',
            name: p.name,
            required: p.required === true || p.in === 'path',
            schema: p.schema,
          })),
        body: contentType && media ? { contentType, schema: media.schema } : undefined,
        stateChanging: ['POST', 'PUT', 'PATCH', 'DELETE'].includes(method.toUpperCase()),
        bearer: (op.security ?? []).some((requirement) => 'bearerAuth' in requirement),
      });
    }
  }
  return out;
}

/**
 * Where a path parameter's value comes from, per tenant. `scope` says whose the value is:
 * 'tenant' (a row of that tenant: another tenant's value must be 404), 'global' (a row every
 * tenant shares), 'control-plane' (a tenant id the operator addresses), 'name' (a role name the
 * caller's tenant owns: a PUT with another tenant's name writes only in the caller's tenant).
 * A path the table does not know makes the operation fail by name: nothing is skipped silently.
 */
export interface PathSource {
  pattern: RegExp;
  param: string;
  scope: 'tenant' | 'global' | 'control-plane' | 'name';
  /**
   * How a signed-in operation without a permission of its own decides who may have the row: 'owner'
   * (the default: another person's row is 404, as the SPEC says of notifications), or 'permission'
   * (the row's list decides: a caller lacking that list's permission is 403 AUTH_FORBIDDEN, as the
   * route documents; an import's progress is open to whoever may create rows in its list).
   */
  rowAccess?: 'owner' | 'permission';
  value(world: World, tenant: TenantWorld): string;
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The path parameters of every entity's routes, derived from the registered entities: a
 * collection's {id} is the world's row of it in the tenant (a global entity's, the one row every
 * tenant reads), a public read's parameter that row's field.
 */
function entitySources(entity: ResolvedEntity): PathSource[] {
  if (entity.singleton) return [];
  const key = entity.names.key;
  const sources: PathSource[] = [
    {
      pattern: new RegExp(`^${escaped(entity.names.path)}/\\{id\\}`),
      param: 'id',
      scope: entity.scope === 'global' ? 'global' : 'tenant',
      value: (w, t) => String(rowOf(w, t, key).id),
    },
  ];
  const publicRead = entity.def.publicRead;
  if (publicRead)
    sources.push({
      pattern: new RegExp(
        `^/api/v1/${escaped(entity.module)}/${escaped(publicRead.path ?? 'public')}/\\{${escaped(publicRead.by)}\\}$`,
      ),
      param: publicRead.by,
      scope: 'tenant',
      value: (w, t) => String(rowOf(w, t, key)[publicRead.by]),
    });
  return sources;
}

/** The path parameters of the hand-written routes, whose rows the world makes by hand (test/security/world.ts). */
const HAND_WRITTEN_SOURCES: PathSource[] = [
  // A published page: the world's content row is a draft, which the public read answers 404.
  {
    pattern: /^\/api\/v1\/content\/public\/\{slug\}$/,
    param: 'slug',
    scope: 'tenant',
    value: (_w, t) => t.rows.publishedSlug,
  },
  { pattern: /^\/api\/v1\/file\/files\/\{id\}/, param: 'id', scope: 'tenant', value: (_w, t) => t.rows.privateFile },
  { pattern: /^\/api\/v1\/file\/public\/\{id\}$/, param: 'id', scope: 'tenant', value: (_w, t) => t.rows.publicFile },
  { pattern: /^\/api\/v1\/auth\/tokens\/\{id\}$/, param: 'id', scope: 'tenant', value: (_w, t) => t.rows.accessToken },
  {
    pattern: /^\/api\/v1\/notification\/notifications\/\{id\}/,
    param: 'id',
    scope: 'tenant',
    value: (_w, t) => t.rows.adminNotification,
  },
  // A tenant's export and an import's progress.
  {
    pattern: /^\/api\/v1\/tenant\/exports\/\{id\}/,
    param: 'id',
    scope: 'tenant',
    value: (_w, t) => t.rows.tenantExport,
  },
  {
    pattern: /^\/api\/v1\/imports\/\{id\}$/,
    param: 'id',
    scope: 'tenant',
    rowAccess: 'permission',
    value: (_w, t) => t.rows.taskImport,
  },
  { pattern: /^\/api\/v1\/auth\/roles\/\{name\}$/, param: 'name', scope: 'name', value: (_w, t) => t.rows.role },
  {
    pattern: /^\/api\/v1\/tenant\/tenants\/\{id\}/,
    param: 'id',
    scope: 'control-plane',
    value: (w) => w.spareTenantId,
  },
  {
    pattern: /^\/api\/v1\/tenant\/tenants\/\{id\}\/hosts\/\{host\}$/,
    param: 'host',
    scope: 'control-plane',
    value: (w) => w.spareHost,
  },
];

/** Where each path parameter's value comes from: the hand-written routes' first, then every entity's, derived. */
export const PATH_SOURCES: PathSource[] = [...HAND_WRITTEN_SOURCES, ...ENTITIES.flatMap(entitySources)];

export function pathSource(op: Operation, param: string): PathSource {
  const source = PATH_SOURCES.find((s) => s.param === param && s.pattern.test(op.path));
  if (!source)
    throw new Error(
      `cannot exercise ${op.id} (${op.method} ${op.path}): no sample for path parameter {${param}}; an entity's are derived, a hand-written route's are listed in HAND_WRITTEN_SOURCES in test/security/operations.ts`,
    );
  return source;
}

let counter = 0;
const unique = () => `${++counter}${randomUUID().slice(0, 6)}`;

/**
 * Overrides: body fields no declaration makes valid (a role name of the tenant, a password in
 * force, a plan granting every feature, a host of the spare tenant), by operation id. Every other
 * field is derived: from its schema, and for an entity's routes from its declarations (a reference
 * names the world's row, an actor the holder of the permission, a create takes the initial state).
 */
const BODY_HINTS: Record<string, (world: World, tenant: TenantWorld) => Record<string, unknown>> = {
  'user-user-roles': () => ({ roles: ['member'] }),
  // Granting no role: an invitation granting roles takes a session, a bearer token's is 401 (docs/auth.md,
  // "Credentials need a session"), and the rule of a token holder passing the guard sends this body too.
  'user-user-invite': (_w, t) => ({ email: `invited-${unique()}@${t.ref.slug}.example.test`, roles: [] }),
  'user-user-create': (_w, t) => ({ email: `created-${unique()}@${t.ref.slug}.example.test` }),
  'user-user-update': () => ({ displayName: `Renamed ${unique()}` }),
  'auth-role-put': () => ({ permissions: ['content:read'] }),
  'auth-token-create': () => ({ name: `Token ${unique()}`, expiresInDays: 30, permissions: [] }),
  'auth-cors-origins-put': (_w, t) => ({ origins: [`https://app.${t.ref.slug}.example.test`] }),
  'auth-session-login': (_w, t) => ({ email: t.admin.email, password: t.admin.password }),
  'auth-password-change': () => ({ currentPassword: 'not the password in force', newPassword: 'a new password 123' }),
  'auth-password-forgot': (_w, t) => ({ email: t.member.email }),
  'billing-subscription-subscribe': (w) => ({ planId: w.plans.free }),
  'billing-subscription-cancel': () => ({ atPeriodEnd: true }),
  'billing-plan-update': () => ({ name: `Renamed ${unique()}` }),
  'tenant-tenant-create': () => {
    const slug = `made-${unique()}`;
    return { slug, host: `${slug}.localhost` };
  },
  'tenant-tenant-add-host': () => ({ host: `added-${unique()}.localhost` }),
  'tenant-tenant-invite': () => ({ email: `first-${unique()}@spare.example.test` }),
  'content-content-update': () => ({ title: `Retitled ${unique()}` }),
  'task-task-update': () => ({ title: `Retitled ${unique()}` }),
};

/** A body the schema accepts for this operation at this tenant (JSON), or a multipart upload. */
export function validBody(op: Operation, world: World, tenant: TenantWorld): Pick<Sent, 'json' | 'body' | 'headers'> {
  if (!op.body) return {};
  if (op.body.contentType === 'multipart/form-data') {
    const boundary = `----sec${randomUUID()}`;
    return {
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      body: Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nsecurity suite bytes\r\n--${boundary}--\r\n`,
      ),
    };
  }
  const hint = BODY_HINTS[op.id]?.(world, tenant) ?? {};
  // A PATCH sends its hint alone when it has one (a partial update of one field), else every field.
  if (op.method === 'PATCH' && Object.keys(hint).length > 0) return { json: hint };
  const derived = checkedSample(op.body.schema, ++counter, `${op.id} request body`) as Record<string, unknown>;
  return { json: { ...derived, ...declaredValues(op, world, tenant), ...hint } };
}

/** What an entity's declarations say of the body of one of its routes, at the tenant. */
function declaredValues(op: Operation, world: World, tenant: TenantWorld): Record<string, unknown> {
  const found = entityOperation(op.id);
  if (!found) return {};
  const { entity, verb } = found;
  if (verb === 'create' || verb === 'replace')
    return { ...slotValues(createSlots(entity), world, tenant), ...initialState(entity) };
  if (verb === 'update') {
    const patchable = new Set(entity.patchable);
    const slots = Object.entries(declaredReferences(entity.def))
      .filter(([field]) => patchable.has(field))
      .map(([field, reference]) => ({ field, reference, fresh: false }));
    return slotValues(slots, world, tenant);
  }
  return entity.def.commands?.[verb] ? slotValues(commandSlots(entity, verb), world, tenant) : {};
}

/** A create body of the entity at the tenant, as its create operation's valid request carries (the world's rows). */
export function entityCreateBody(entity: ResolvedEntity, world: World, tenant: TenantWorld): Record<string, unknown> {
  const operationId = entity.names.operationId('create');
  const derived = checkedSample(entity.schemas.create, ++counter, `${operationId} request body`) as Record<
    string,
    unknown
  >;
  const hint = BODY_HINTS[operationId]?.(world, tenant) ?? {};
  return {
    ...derived,
    ...slotValues(createSlots(entity), world, tenant),
    ...initialState(entity),
    ...hint,
  };
}

/** A valid value for a query parameter (its default, or derived from its schema). */
export function validQuery(param: Param): string | undefined {
  const s = param.schema as { default?: unknown };
  if (!param.required) return s.default === undefined ? undefined : String(s.default);
  return String(checkedSample(param.schema, ++counter, `query ${param.name}`));
}

/** The path with each parameter replaced, by default with the tenant's own sample. */
export function fillPath(
  op: Operation,
  world: World,
  tenant: TenantWorld,
  override: Record<string, string> = {},
): string {
  let path = op.path;
  for (const p of op.params.filter((x) => x.in === 'path')) {
    const value = override[p.name] ?? pathSource(op, p.name).value(world, tenant);
    path = path.replace(`{${p.name}}`, encodeURIComponent(value));
  }
  const query = op.params
    .filter((x) => x.in === 'query')
    .map((p) => [p.name, validQuery(p)] as const)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v!)}`);
  return query.length ? `${path}?${query.join('&')}` : path;
}

/** A complete, valid request for the operation at the tenant (the cookie is the caller's choice). */
export function validRequest(
  op: Operation,
  world: World,
  tenant: TenantWorld,
  cookie?: string,
  override: Record<string, string> = {},
): Sent {
  return {
    operationId: op.id,
    method: op.method,
    host: tenant.host,
    path: fillPath(op, world, tenant, override),
    ...(cookie ? { cookie } : {}),
    ...validBody(op, world, tenant),
  };
}

/** Where an operation lives: an operator operation at the operator's host, any other at a customer's. */
export const homeTenants = (op: Operation, world: World): TenantWorld[] =>
  op.operator ? [world.operator] : [world.a, world.b, world.operator];
