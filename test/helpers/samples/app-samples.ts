import type { TenantRef } from '../../../framework/context/tenant.ts';
import type { ResolvedEntity } from '../../../framework/entity/resolve.ts';
import { hashSecret } from '../../../framework/access/session-cookie.ts';
import { OPERATOR_HOST, signInAs, type SignedIn, type TestApp } from '../app.ts';
import { derivedCommandBody, derivedCreateBody, type SampleSources } from './derive.ts';
import { commandSample, createSample } from './overrides.ts';

type Body = Record<string, unknown>;

/** The derived bodies of a running test app, as a caller of a tenant sends them. */
export interface AppSamples {
  /** A fresh number for a derivation (strings and numbers differ between calls, so unique keys stay unique). */
  next(): number;
  /** Where a body's references and actors come from at the tenant. */
  at(tenant: TenantRef): SampleSources;
  /** A create body of the entity: derived from its declarations, then the override's values and the caller's row access. */
  createBody(entity: ResolvedEntity, tenant: TenantRef, caller: SignedIn): Promise<Body>;
  /** A command's body for the row it is sent to (undefined when the command takes none), derived and overridden the same way. */
  commandBody(
    entity: ResolvedEntity,
    command: string,
    tenant: TenantRef,
    caller: SignedIn,
    row?: Readonly<Body>,
  ): Promise<Body | undefined>;
}

const hostOf = (tenant: TenantRef) => (tenant.isOperator ? OPERATOR_HOST : `${tenant.slug}.localhost`);

/**
 * The bodies test/helpers/samples/derive.ts derives, made real in a test app: a reference names a
 * row of its entity made first through that entity's own create route (at the operator for a
 * global entity), once per tenant and entity unless a unique key asks for a fresh one; an actor
 * is a person of the tenant holding the permission. A module's own test uses it to send what its
 * entity's declarations describe, so it keeps passing as the author reshapes the entity.
 * `entities` are the resolved entities of the app's modules (a reference names one of them).
 */
export function appSamples(app: () => TestApp, entities: readonly ResolvedEntity[]): AppSamples {
  let counter = 0;
  const next = () => ++counter;
  const references = new Map<string, Promise<string>>();
  const actors = new Map<string, Promise<string>>();
  const makers = new Map<string, Promise<SignedIn>>();

  const entityOf = (key: string): ResolvedEntity => {
    const found = entities.find((e) => e.names.key === key);
    if (!found) throw new Error(`a reference names ${key}, which no registered entity is`);
    return found;
  };
  /** A signed-in caller of the tenant holding every permission: who makes the rows other entities' bodies name. */
  const makerOf = (tenant: TenantRef) => {
    let maker = makers.get(tenant.id);
    if (!maker) makers.set(tenant.id, (maker = signInAs(app(), tenant, ['*'])));
    return maker;
  };

  /** The caller's row-access values for the entity (field → value) that its create body may carry. */
  async function accessOf(entity: ResolvedEntity, tenant: TenantRef, caller: SignedIn): Promise<Body> {
    const rowAccess = entity.def.rowAccess;
    if (!rowAccess) return {};
    const settable = (entity.schemas.create as { properties: Body }).properties;
    const values = await app().services.transactions.run(tenant, async (ctx) => ({ ...rowAccess(ctx) }), {
      sessionHash: hashSecret(caller.rawSessionId),
    });
    return Object.fromEntries(Object.entries(values).filter(([field]) => field in settable));
  }

  async function createBody(entity: ResolvedEntity, tenant: TenantRef, caller: SignedIn): Promise<Body> {
    const n = next();
    const given = {
      ...(await createSample(app().services, tenant, entity.names.key, n, {
        sessionHash: hashSecret(caller.rawSessionId),
      })),
      ...(await accessOf(entity, tenant, caller)),
    };
    return derivedCreateBody(entity, n, at(tenant), given);
  }

  /** A row of the entity at the tenant, made through its create route: its id. */
  async function makeRow(target: ResolvedEntity, tenant: TenantRef): Promise<string> {
    if (target.singleton)
      throw new Error(`a reference names ${target.names.key}, a singleton: a reference names a row of a collection`);
    const maker = await makerOf(tenant);
    const body = await createBody(target, tenant, maker);
    const res = await app().http(hostOf(tenant)).post(target.names.path).set('Cookie', maker.cookie).send(body);
    if (res.status !== 201)
      throw new Error(`making a ${target.names.key} row to reference: ${res.status} ${JSON.stringify(res.body)}`);
    return String(res.body.id);
  }

  function at(tenant: TenantRef): SampleSources {
    return {
      reference(key, { fresh }) {
        const target = entityOf(key);
        const home = target.scope === 'global' ? app().operator : tenant;
        const cacheKey = `${home.id} ${key}`;
        const cached = references.get(cacheKey);
        if (cached && !fresh) return cached;
        const made = makeRow(target, home);
        if (!fresh) references.set(cacheKey, made);
        return made;
      },
      actor(permission) {
        const cacheKey = `${tenant.id} ${permission}`;
        let actor = actors.get(cacheKey);
        if (!actor) actors.set(cacheKey, (actor = signInAs(app(), tenant, [permission]).then((a) => a.userId)));
        return actor;
      },
    };
  }

  async function commandBody(
    entity: ResolvedEntity,
    command: string,
    tenant: TenantRef,
    caller: SignedIn,
    row?: Readonly<Body>,
  ): Promise<Body | undefined> {
    if (!entity.def.commands?.[command]?.body) return undefined;
    const n = next();
    const given = await commandSample(app().services, tenant, entity.names.key, command, n, {
      sessionHash: hashSecret(caller.rawSessionId),
      ...(row ? { row } : {}),
    });
    return derivedCommandBody(entity, command, n, at(tenant), given);
  }

  return { next, at, createBody, commandBody };
}
