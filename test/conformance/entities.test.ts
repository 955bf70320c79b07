import { commandSample, createSample } from '../helpers/samples/overrides.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { TSchema } from 'typebox';
import Value from 'typebox/value';
import { startTestApp, createCustomer, signInAs, OPERATOR_HOST, type TestApp } from '../helpers/app.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { testConfig } from '../helpers/config.ts';
import { allModules } from '../../modules/index.ts';
import { Registry } from '../../framework/entity/registry.ts';
import type { ResolvedEntity } from '../../framework/entity/resolve.ts';
import type { AnyRoute } from '../../framework/entity/define.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { sampleValue } from '../helpers/samples/values.ts';
import { appSamples } from '../helpers/samples/app-samples.ts';
import {
  actorFields,
  commandOutcome,
  derivedCommandBody,
  derivedCreateBody,
  patchValue,
  referenceTargets,
  refusedPatchMove,
  uniqueFields,
  type Outcome,
} from '../helpers/samples/derive.ts';
import { hashSecret } from '../../framework/access/session-cookie.ts';

/**
 * The conformance suite: every entity the installation registers (plus the test kit's) is held to
 * the same contract, derived from its definition alone. A new entity joins by being registered:
 * its bodies, the rows they name and the answers each step must give are derived from its
 * declarations (test/helpers/samples/derive.ts), so nothing here names an entity.
 */
const MODULES = [...allModules, testkitModule];
const ENTITIES = new Registry(MODULES, testConfig()).entities;
const SYSTEM_FIELDS = ['id', 'createdAt', 'updatedAt'] as const;
const UNKNOWN_FIELD = 'conformanceUnknownField';

let app: TestApp;
let customerA: TenantRef;
let customerB: TenantRef;

beforeAll(async () => {
  app = await startTestApp({ modules: MODULES });
  customerA = await createCustomer(app, 'conformance-a');
  customerB = await createCustomer(app, 'conformance-b');
});
afterAll(async () => {
  await app?.close();
});

const hostOf = (tenant: TenantRef) => (tenant.isOperator ? OPERATOR_HOST : `${tenant.slug}.localhost`);
const isOperatorPermission = (p: string) => app.services.registry.isOperatorPermission(p);

interface Problem {
  status: number;
  body: { code?: string; [key: string]: unknown };
  headers: Record<string, string>;
}

/**
 * Where a body's references and actors come from at a tenant (test/helpers/samples/app-samples.ts):
 * a row of the named entity made through its own create route (a global one at the operator), once
 * per tenant and entity unless a unique key asks for a fresh one; a person of the tenant holding
 * the actor's permission.
 */
const samples = appSamples(() => app, ENTITIES);
const sourcesAt = samples.at;
const next = samples.next;

function expectProblem(res: Problem, status: number, code: string, what: string): void {
  expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(status);
  expect(res.headers['content-type'], what).toMatch(/^application\/problem\+json/);
  expect(res.body.code, what).toBe(code);
}

describe.each(ENTITIES.map((e) => [e.names.key, e] as const))('entity %s', (_key, entity: ResolvedEntity) => {
  const { names, def } = entity;
  const singleton = def.singleton === true;
  const global = (def.scope ?? 'tenant') === 'global';
  const hard = def.storage?.deleteMode === 'hard';
  const commands = Object.entries(def.commands ?? {});
  const commandPermission = (c: string) => def.commands?.[c]?.permission ?? def.permissions.write;
  const allPermissions = () => [
    ...new Set([def.permissions.read, def.permissions.write, ...commands.map(([c]) => commandPermission(c))]),
  ];
  const routeOf = (operation: string): AnyRoute =>
    app.services.routes.find((r) => r.route.operationId === names.operationId(operation))!.route;
  // A collection has its five generic routes; a singleton GET, and PUT, PATCH, DELETE only as declared.
  const declared = new Set<string>(def.singletonRoutes ?? []);
  const serves = (verb: 'list' | 'create' | 'replace' | 'update' | 'delete') =>
    singleton ? declared.has(verb) : verb !== 'replace';

  // An entity guarded by an operator permission lives at the operator tenant; any other at a customer.
  let home: TenantRef;
  let other: TenantRef;
  let cookie: string;
  let otherCookie: string;
  /** The sessions (their hashes) of the caller at home and at the other tenant: the overrides run as them. */
  let callerHash: Buffer;
  let otherHash: Buffer;
  /** Another caller of the home tenant, holding the same permissions. */
  let peerCookie: string;
  /** The caller's row-access values (field → value), merged into the create bodies. */
  let access: Record<string, unknown> = {};
  let row: Record<string, unknown>;
  /** What a read of a row that is not there answers: the body every hidden row must answer too. */
  let missing: Problem['body'];

  const http = (tenant: TenantRef = home) => app.http(hostOf(tenant));
  const itemPath = (id: string) => (singleton ? names.path : `${names.path}/${id}`);
  const commandPath = (id: string, command: string) => `${itemPath(id)}/${command}`;

  /** A create body derived from the declarations, the override's values and the caller's row access over it. */
  async function createBody(): Promise<Record<string, unknown>> {
    const n = next();
    const hint = await createSample(app.services, home, names.key, n, { sessionHash: callerHash });
    const settable = (entity.schemas.create as { properties: Record<string, unknown> }).properties;
    const own = Object.fromEntries(Object.entries(access).filter(([field]) => field in settable));
    return derivedCreateBody(entity, n, sourcesAt(home), { ...hint, ...own });
  }
  /** A command's body at the tenant (undefined when it takes none), for the row it is sent to. */
  const commandBody = async (tenant: TenantRef, command: string) => {
    if (!def.commands?.[command]?.body) return undefined;
    const n = next();
    const hint = await commandSample(app.services, tenant, names.key, command, n, {
      sessionHash: tenant === home ? callerHash : otherHash,
      ...(row ? { row } : {}),
    });
    return derivedCommandBody(entity, command, n, sourcesAt(tenant), hint);
  };
  const sendCommand = async (
    tenant: TenantRef,
    c: string,
    id: string,
    command: string,
    body?: Record<string, unknown>,
  ) => {
    const sent = body ?? (await commandBody(tenant, command));
    const req = http(tenant).post(commandPath(id, command)).set('Cookie', c);
    return sent ? req.send(sent) : req;
  };
  /** The create request: POST to the collection, or a singleton's PUT (undefined when it declares none). */
  const createRequest = (body: Record<string, unknown>) =>
    singleton
      ? declared.has('replace')
        ? http().put(names.path).set('Cookie', cookie).send(body)
        : undefined
      : http().post(names.path).set('Cookie', cookie).send(body);

  /**
   * A valid PATCH body changing one field, or undefined when nothing is patchable: the first field
   * that can take another value (a state field one of its declared PATCH moves, a reference
   * another row).
   */
  async function patchBody(current: Record<string, unknown>): Promise<Record<string, unknown> | undefined> {
    const schemas = (entity.schemas.patch as { properties: Record<string, TSchema> }).properties;
    const fields = Object.keys(schemas);
    if (fields.length === 0) return undefined;
    for (const field of fields) {
      const value = await patchValue(entity, field, current, next(), sourcesAt(home));
      if (value !== undefined) return { [field]: value };
    }
    return { [fields[0]!]: sampleValue(schemas[fields[0]!]!, next()) };
  }
  /** The row as it stands, read through the API. */
  const readRow = async (id: string): Promise<Record<string, unknown>> =>
    (await http().get(itemPath(id)).set('Cookie', cookie)).body;

  async function stored(id: string): Promise<Record<string, unknown> | undefined> {
    const { rows } = await app.services.db.pool.query(`select * from "${names.table}" where id = $1`, [id]);
    return rows[0];
  }
  async function events(): Promise<
    { id: string; name: string; tenant_id: string; payload: Record<string, unknown> }[]
  > {
    const { rows } = await app.services.db.pool.query(
      `select id, name, tenant_id, payload from outbox where tenant_id = any($1) order by id`,
      [[home.id, other.id]],
    );
    return rows;
  }
  async function liveRows(): Promise<number> {
    const { rows } = await app.services.db.pool.query(
      `select count(*)::int as n from "${names.table}"${hard ? '' : ' where deleted_at is null'}`,
    );
    return rows[0].n;
  }
  /** Runs the writes and checks nothing was stored or published by them. */
  async function writesNothing(id: string, act: () => Promise<void>): Promise<void> {
    const before = { row: await stored(id), events: (await events()).length, rows: await liveRows() };
    await act();
    expect(await stored(id)).toEqual(before.row);
    expect((await events()).length, 'no event was published').toBe(before.events);
    expect(await liveRows()).toBe(before.rows);
  }
  const expectMissing = (res: Problem, what: string) => {
    expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(404);
    // The same answer, but for the request id each problem document carries.
    expect({ ...res.body, requestId: undefined }, what).toEqual({ ...missing, requestId: undefined });
  };

  /** The command that created a singleton's row, when no PUT did. */
  let creator: string | undefined;
  async function createByCommand(): Promise<Problem> {
    for (const [command] of commands) {
      const res = await sendCommand(home, cookie, '', command);
      if (res.status === 200) {
        creator = command;
        return res;
      }
    }
    throw new Error(
      `${names.key} declares no PUT and none of its commands creates the row: the conformance suite cannot create one`,
    );
  }

  beforeAll(async () => {
    const operatorOnly = allPermissions().some(isOperatorPermission);
    home = operatorOnly ? app.operator : customerA;
    other = operatorOnly ? customerA : customerB;
    const caller = await signInAs(app, home, allPermissions());
    cookie = caller.cookie;
    callerHash = hashSecret(caller.rawSessionId);
    const otherCaller = await signInAs(app, other, ['*']);
    otherCookie = otherCaller.cookie;
    otherHash = hashSecret(otherCaller.rawSessionId);
    peerCookie = (await signInAs(app, home, allPermissions())).cookie;
    // The rows the bodies name are made now, at both tenants: made inside a step, their own
    // events would count as the step's.
    for (const target of referenceTargets(entity))
      for (const tenant of [home, other]) await sourcesAt(tenant).reference(target, { fresh: false });
    if (def.rowAccess) {
      access = await app.services.transactions.run(home, async (ctx) => ({ ...def.rowAccess!(ctx) }), {
        sessionHash: hashSecret(caller.rawSessionId),
      });
    }
  });

  it('serves its generic routes, its command routes and its history and restore routes under <module>-<entity>-<verb>, and no others', async () => {
    const doc = (await app.http().get('/api/v1/openapi.json')).body as {
      paths: Record<string, Record<string, { operationId: string }>>;
    };
    const item = singleton ? names.path : `${names.path}/{id}`;
    const generic: [string, string, string][] = singleton
      ? [
          ['GET', item, 'read'],
          ['PUT', item, 'replace'],
          ['PATCH', item, 'update'],
          ['DELETE', item, 'delete'],
        ]
      : [
          ['GET', names.path, 'list'],
          ['POST', names.path, 'create'],
          ['GET', item, 'read'],
          ['PATCH', item, 'update'],
          ['DELETE', item, 'delete'],
        ];
    // A collection's list also takes imports (issue 48), unless its create shows a secret once.
    const imports = !singleton && !entity.def.admin?.shownOnce?.length;
    const expected = [
      ...generic.filter(([, , verb]) => verb === 'read' || serves(verb as 'list')),
      ...commands.map(([c]) => ['POST', `${item}/${c}`, c] as [string, string, string]),
      // History (docs/history.md) unless declared off; a singleton restores through its PATCH only.
      ...(def.history === false ? [] : [['GET', `${item}/history`, 'history'] as [string, string, string]]),
      ...(def.history === false || (singleton && !serves('update'))
        ? []
        : [['POST', `${item}/restore`, 'restore'] as [string, string, string]]),
      ...(imports ? [['POST', `${names.path}/import`, 'import'] as [string, string, string]] : []),
      // A collection's list has its summary: counts per group (issue 48).
      ...(singleton ? [] : [['GET', `${names.path}/summary`, 'summary'] as [string, string, string]]),
      // A tenant's collection can be followed as a stream of live changes (issue 45).
      ...(!singleton && entity.scope !== 'global'
        ? [['GET', `${names.path}/stream`, 'stream'] as [string, string, string]]
        : []),
    ];
    for (const [method, path, verb] of expected) {
      expect(
        app.web!.hasRoute({ method: method as 'GET', url: path.replace('{id}', ':id') }),
        `${method} ${path}`,
      ).toBe(true);
      expect(doc.paths[path]?.[method.toLowerCase()]?.operationId, `${method} ${path}`).toBe(
        `${entity.module}-${entity.name}-${verb}`,
      );
    }
    const documented = Object.entries(doc.paths)
      .filter(([path]) => path === names.path || path.startsWith(`${names.path}/`))
      .flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`));
    expect(documented.sort()).toEqual(expected.map(([method, path]) => `${method} ${path}`).sort());
  });

  it('creates a row (a singleton: answers 404 until then), publishing its created event in that transaction', async () => {
    const before = (await events()).length;
    let res: Problem;
    if (singleton) {
      const absent = await http().get(names.path).set('Cookie', cookie);
      expectProblem(absent, 404, 'NOT_FOUND', 'a singleton before it exists');
      missing = absent.body;
      // Created by its PUT when declared, otherwise by the first command that creates it.
      const put = createRequest(await createBody());
      res = put ? await put : await createByCommand();
      expect(res.status, JSON.stringify(res.body)).toBe(put ? 201 : 200);
    } else {
      const unknown = await http().get(itemPath(randomUUID())).set('Cookie', cookie);
      expectProblem(unknown, 404, 'NOT_FOUND', 'an unknown id');
      missing = unknown.body;
      res = await http()
        .post(names.path)
        .set('Cookie', cookie)
        .send(await createBody());
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    }
    expect(
      Value.Check(entity.schemas.row, res.body),
      JSON.stringify([...Value.Errors(entity.schemas.row, res.body)]),
    ).toBe(true);
    row = res.body;
    const published = (await events()).slice(before);
    expect(published.filter((e) => e.name === names.events.created)).toEqual([
      expect.objectContaining({ tenant_id: home.id, payload: expect.objectContaining({ id: row.id }) }),
    ]);
    const route = singleton ? (declared.has('replace') ? routeOf('replace') : routeOf(creator!)) : routeOf('create');
    for (const e of published) expect(route.publishes ?? [], `create published ${e.name}`).toContain(e.name);
    const read = await http()
      .get(itemPath(String(row.id)))
      .set('Cookie', cookie);
    expect(read.status).toBe(200);
    expect(read.body.id).toBe(row.id);
  });

  it('refuses command-owned, immutable, system, read-only and unknown fields on create and PATCH, storing and publishing nothing', async () => {
    const id = String(row.id);
    // The bodies are made before the writes are watched: a row they name is made once, outside.
    const base = await createBody();
    const create = async (extra: Record<string, unknown>) => createRequest({ ...base, ...extra });
    const patch = (body: Record<string, unknown>) =>
      serves('update') ? http().patch(itemPath(id)).set('Cookie', cookie).send(body) : undefined;
    const validPatch = await patchBody(row);
    await writesNothing(id, async () => {
      for (const [field, owners] of Object.entries(entity.commandOwners)) {
        const value = sampleValue(def.fields[field]!, next());
        // Every command writing the field is named: `routes` lists them all, `route` is the first.
        const routes = owners.map((command) => `POST ${singleton ? names.path : `${names.path}/{id}`}/${command}`);
        const created = await create({ [field]: value });
        if (created) expectProblem(created, 422, 'FIELD_COMMAND_OWNED', `create with ${field}`);
        const patched = await patch({ [field]: value });
        if (patched) expectProblem(patched, 422, 'FIELD_COMMAND_OWNED', `PATCH with ${field}`);
        for (const refusal of [created, patched]) {
          if (!refusal) continue;
          expect(refusal.body).toMatchObject({ field, route: routes[0], routes });
          for (const route of routes) expect(refusal.body.detail, `${field} refusal names ${route}`).toContain(route);
        }
      }
      for (const field of entity.immutable) {
        const patched = await patch({ [field]: sampleValue(def.fields[field]!, next()) });
        if (patched) expectProblem(patched, 422, 'FIELD_IMMUTABLE', `PATCH with immutable ${field}`);
      }
      for (const field of entity.readOnly) {
        const value = sampleValue(def.fields[field]!, next());
        const created = await create({ [field]: value });
        if (created) expectProblem(created, 422, 'FIELD_IMMUTABLE', `create with read-only ${field}`);
        const patched = await patch({ [field]: value });
        if (patched) expectProblem(patched, 422, 'FIELD_IMMUTABLE', `PATCH with read-only ${field}`);
      }
      for (const field of SYSTEM_FIELDS) {
        const value = field === 'id' ? randomUUID() : new Date().toISOString();
        const created = await create({ [field]: value });
        if (created) expect(created.status, `create with ${field}`).toBe(422);
        const patched = await patch({ [field]: value });
        if (patched) expect(patched.status, `PATCH with ${field}`).toBe(422);
      }
      const unknownCreate = await create({ [UNKNOWN_FIELD]: 'x' });
      if (unknownCreate) {
        expectProblem(unknownCreate, 422, 'VALIDATION_FAILED', 'create with an unknown field');
        expect(JSON.stringify(unknownCreate.body.errors)).toContain(UNKNOWN_FIELD);
      }
      const unknownPatch = await patch({ ...(validPatch ?? {}), [UNKNOWN_FIELD]: 'x' });
      if (unknownPatch) expectProblem(unknownPatch, 422, 'VALIDATION_FAILED', 'PATCH with an unknown field');
    });
  });

  it('refuses a caller without the permission (403) and an anonymous caller (401), writing nothing', async () => {
    const id = String(row.id);
    const nobody = (await signInAs(app, home, [])).cookie;
    const readerOnly = (await signInAs(app, home, [def.permissions.read])).cookie;
    const patch = await patchBody(row);
    const routes: { what: string; permission: string; send: (cookieValue: string | undefined) => Promise<Problem> }[] =
      [];
    const withCookie = <T extends { set(k: string, v: string): T }>(req: T, c: string | undefined): T =>
      c ? req.set('Cookie', c) : req;
    const createPayload = await createBody();
    if (serves('list'))
      routes.push({
        what: 'list',
        permission: def.permissions.read,
        send: (c) => withCookie(http().get(names.path), c),
      });
    routes.push({
      what: 'read',
      permission: def.permissions.read,
      send: (c) => withCookie(http().get(itemPath(id)), c),
    });
    if (serves('create'))
      routes.push({
        what: 'create',
        permission: def.permissions.write,
        send: (c) => withCookie(http().post(names.path), c).send(createPayload),
      });
    if (serves('replace'))
      routes.push({
        what: 'PUT',
        permission: def.permissions.write,
        send: (c) => withCookie(http().put(names.path), c).send(createPayload),
      });
    if (patch && serves('update'))
      routes.push({
        what: 'PATCH',
        permission: def.permissions.write,
        send: (c) => withCookie(http().patch(itemPath(id)), c).send(patch),
      });
    if (serves('delete'))
      routes.push({
        what: 'DELETE',
        permission: def.permissions.write,
        send: (c) => withCookie(http().delete(itemPath(id)), c),
      });
    for (const [command] of commands) {
      const body = await commandBody(home, command);
      routes.push({
        what: command,
        permission: commandPermission(command),
        send: (c) =>
          body
            ? withCookie(http().post(commandPath(id, command)), c).send(body)
            : withCookie(http().post(commandPath(id, command)), c),
      });
    }
    await writesNothing(id, async () => {
      for (const route of routes) {
        expectProblem(await route.send(undefined), 401, 'AUTH_REQUIRED', `anonymous ${route.what}`);
        expectProblem(await route.send(nobody), 403, 'AUTH_FORBIDDEN', `${route.what} without any permission`);
        if (route.permission !== def.permissions.read) {
          expectProblem(
            await route.send(readerOnly),
            403,
            'AUTH_FORBIDDEN',
            `${route.what} with only ${def.permissions.read}`,
          );
        }
      }
    });
  });

  it.runIf(!global)(
    'hides a row from another tenant: read, PATCH, DELETE and commands answer the unknown-id 404, and nothing changes',
    async () => {
      const id = String(row.id);
      const expectHidden = (res: Problem, permission: string, what: string) => {
        if (isOperatorPermission(permission) && !other.isOperator)
          return expectProblem(res, 403, 'AUTH_NOT_OPERATOR', what);
        expectMissing(res, what);
      };
      const patch = await patchBody(row);
      await writesNothing(id, async () => {
        // A singleton of another tenant is that tenant's own, which does not exist there yet.
        expectHidden(
          await http(other).get(itemPath(id)).set('Cookie', otherCookie),
          def.permissions.read,
          'read from the other tenant',
        );
        if (patch && serves('update'))
          expectHidden(
            await http(other).patch(itemPath(id)).set('Cookie', otherCookie).send(patch),
            def.permissions.write,
            'PATCH from the other tenant',
          );
        if (serves('delete'))
          expectHidden(
            await http(other).delete(itemPath(id)).set('Cookie', otherCookie),
            def.permissions.write,
            'DELETE from the other tenant',
          );
        // A singleton's command at another tenant acts on (or creates) that tenant's own row.
        if (!singleton) {
          for (const [command] of commands) {
            expectHidden(
              await sendCommand(other, otherCookie, id, command),
              commandPermission(command),
              `${command} from the other tenant`,
            );
          }
        }
        if (serves('list') && !isOperatorPermission(def.permissions.read)) {
          const list = await http(other).get(`${names.path}?limit=100`).set('Cookie', otherCookie);
          expect(list.status).toBe(200);
          expect(list.body.items.map((r: { id: string }) => r.id)).not.toContain(id);
        }
      });
    },
  );

  it.runIf(global)(
    'global scope: every tenant reads the same row, and a customer cannot write it (403 AUTH_NOT_OPERATOR)',
    async () => {
      const id = String(row.id);
      const fresh = (await http().get(itemPath(id)).set('Cookie', cookie)).body;
      for (const tenant of [customerA, customerB]) {
        const reader = (await signInAs(app, tenant, [def.permissions.read])).cookie;
        const read = await http(tenant).get(itemPath(id)).set('Cookie', reader);
        expect(read.status, `read from ${tenant.slug}: ${JSON.stringify(read.body)}`).toBe(200);
        expect(read.body).toEqual(fresh);
        if (serves('list')) {
          const list = await http(tenant).get(`${names.path}?limit=100`).set('Cookie', reader);
          expect(
            list.body.items.map((r: { id: string }) => r.id),
            `list at ${tenant.slug}`,
          ).toContain(id);
        }
      }
      const createPayload = await createBody();
      const patch = await patchBody(row);
      await writesNothing(id, async () => {
        const customer = (await signInAs(app, customerA, ['*'])).cookie;
        const at = http(customerA);
        expectProblem(
          await at.post(names.path).set('Cookie', customer).send(createPayload),
          403,
          'AUTH_NOT_OPERATOR',
          'create at a customer',
        );
        if (patch)
          expectProblem(
            await at.patch(itemPath(id)).set('Cookie', customer).send(patch),
            403,
            'AUTH_NOT_OPERATOR',
            'PATCH at a customer',
          );
        expectProblem(
          await at.delete(itemPath(id)).set('Cookie', customer),
          403,
          'AUTH_NOT_OPERATOR',
          'DELETE at a customer',
        );
        for (const [command] of commands) {
          expectProblem(
            await sendCommand(customerA, customer, id, command),
            403,
            'AUTH_NOT_OPERATOR',
            `${command} at a customer`,
          );
        }
      });
    },
  );

  it.runIf(def.rowAccess !== undefined)(
    'row access: another caller of the tenant gets the unknown-id 404 on read, PATCH, DELETE and commands, and does not list the row',
    async () => {
      const id = String(row.id);
      const patch = await patchBody(row);
      await writesNothing(id, async () => {
        expectMissing(await http().get(itemPath(id)).set('Cookie', peerCookie), 'read by another caller');
        if (patch && serves('update'))
          expectMissing(
            await http().patch(itemPath(id)).set('Cookie', peerCookie).send(patch),
            'PATCH by another caller',
          );
        if (serves('delete'))
          expectMissing(await http().delete(itemPath(id)).set('Cookie', peerCookie), 'DELETE by another caller');
        if (!singleton) {
          for (const [command] of commands)
            expectMissing(await sendCommand(home, peerCookie, id, command), `${command} by another caller`);
        }
        if (serves('list')) {
          const list = await http().get(`${names.path}?limit=100`).set('Cookie', peerCookie);
          expect(list.status).toBe(200);
          expect(list.body.items.map((r: { id: string }) => r.id)).not.toContain(id);
          const own = await http().get(`${names.path}?limit=100`).set('Cookie', cookie);
          expect(own.body.items.map((r: { id: string }) => r.id)).toContain(id);
        }
      });
    },
  );

  it.runIf(def.rowAccess === undefined)(
    'without row access: every caller of the tenant holding the read permission reads the row',
    async () => {
      const read = await http()
        .get(itemPath(String(row.id)))
        .set('Cookie', peerCookie);
      expect(read.status, JSON.stringify(read.body)).toBe(200);
      expect(read.body.id).toBe(row.id);
    },
  );

  it('publishes an event exactly when a write commits: PATCH, commands, a repeated create, DELETE', async () => {
    const id = String(row.id);
    /**
     * Every step states what it must answer: success (2xx), or exactly one refusal (status and
     * code). A refusal must also write and publish nothing; a success publishes only declared
     * events. Any other answer, another 4xx included, fails the step.
     */
    const step = async (
      what: string,
      send: () => Promise<Problem>,
      declaredEvents: readonly string[],
      expected: Outcome,
      committedEvent?: string,
    ) => {
      const before = (await events()).length;
      const previous = await stored(id);
      const res = await send();
      if (process.env.CONFORMANCE_TRACE) console.log(names.key, what, res.status, res.body?.code ?? '');
      if (expected === 'success')
        expect(res.status, `${what} must succeed: ${JSON.stringify(res.body)}`).toBeLessThan(300);
      else
        expectProblem(
          res,
          expected.status,
          expected.code,
          `${what} must be refused with ${expected.status} ${expected.code}`,
        );
      const published = (await events()).slice(before);
      if (expected !== 'success') {
        expect(published, `${what} was refused (${res.status}) and must publish nothing`).toEqual([]);
        expect(await stored(id), `${what} was refused and must change nothing`).toEqual(previous);
        return res;
      }
      for (const e of published) expect(declaredEvents, `${what} published ${e.name}`).toContain(e.name);
      const changed = JSON.stringify(await stored(id)) !== JSON.stringify(previous);
      if (committedEvent)
        expect(
          published.some((e) => e.name === committedEvent),
          `${what} committed: ${committedEvent}`,
        ).toBe(changed || what === 'DELETE');
      if (changed) expect(published.length, `${what} changed the row and must publish`).toBeGreaterThan(0);
      return res;
    };
    const patch = await patchBody(await readRow(id));
    if (patch && serves('update'))
      await step(
        'PATCH',
        () => http().patch(itemPath(id)).set('Cookie', cookie).send(patch),
        routeOf('update').publishes ?? [],
        'success',
        names.events.updated,
      );
    // A move its states.patchMoves leaves out: the declared refusal, nothing written.
    const move = serves('update') ? refusedPatchMove(entity, await readRow(id)) : undefined;
    if (move)
      await step(
        `PATCH ${move.field} to ${move.value}`,
        () =>
          http()
            .patch(itemPath(id))
            .set('Cookie', cookie)
            .send({ [move.field]: move.value }),
        routeOf('update').publishes ?? [],
        { status: 409, code: move.code },
      );

    const body = await createBody();
    const creating = singleton ? (declared.has('replace') ? 'replace' : undefined) : 'create';
    if (creating) {
      await step('create', () => createRequest(body)!, routeOf(creating).publishes ?? [], 'success');
      // The same body again: a collection whose body carries a unique field refuses it with that
      // key's code (nothing published); otherwise it is a second row (one more event), or for a
      // singleton's PUT the same row again.
      const taken = singleton ? undefined : uniqueFields(entity).find((u) => body[u.field] !== undefined);
      await step(
        'repeated create',
        () => createRequest(body)!,
        routeOf(creating).publishes ?? [],
        taken ? { status: 409, code: taken.code } : 'success',
      );
    }

    // Each command in the row's state as it stands: what its states accept succeeds, any other
    // state is the entity's refusal; a person named who may not act is refused first.
    for (const [command] of commands) {
      const expected = commandOutcome(entity, command, await readRow(id));
      const body = await commandBody(home, command);
      const actorsNamed = actorFields(entity, command);
      if (expected === 'success' && body && actorsNamed.length > 0)
        await step(
          `${command} naming nobody who may act`,
          () =>
            sendCommand(home, cookie, id, command, {
              ...body,
              ...Object.fromEntries(actorsNamed.map((field) => [field, randomUUID()])),
            }),
          routeOf(command).publishes ?? [],
          { status: 422, code: 'VALIDATION_FAILED' },
        );
      await step(
        command,
        () => sendCommand(home, cookie, id, command, body),
        routeOf(command).publishes ?? [],
        expected,
      );
    }

    if (!serves('delete')) return;
    const deleted = await step(
      'DELETE',
      () => http().delete(itemPath(id)).set('Cookie', cookie),
      routeOf('delete').publishes ?? [],
      'success',
      names.events.deleted,
    );
    expect(deleted.status).toBe(204);
    if (hard) expect(await stored(id), 'a hard delete removes the row').toBeUndefined();
    else expect((await stored(id))?.deleted_at).toBeInstanceOf(Date);
    expectMissing(await http().get(itemPath(id)).set('Cookie', cookie), 'read after DELETE');
  });
});

it('covers every entity of the installation and the test kit', () => {
  const keys = ENTITIES.map((e) => e.names.key);
  expect(keys).toContain('testkit.widget');
  for (const module of MODULES) for (const e of module.entities ?? []) expect(keys).toContain(`${e.module}.${e.name}`);
  // The test kit brings one entity of each shape: global, singleton, row access, hard delete.
  const shapes = ENTITIES.map((e) => e.def);
  expect(shapes.some((d) => d.scope === 'global')).toBe(true);
  expect(shapes.some((d) => d.singleton === true)).toBe(true);
  expect(shapes.some((d) => d.rowAccess !== undefined)).toBe(true);
  expect(shapes.some((d) => d.storage?.deleteMode === 'hard')).toBe(true);
});
