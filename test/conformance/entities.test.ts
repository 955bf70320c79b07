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
import { checkedSample, sampleObject, sampleValue } from './sample-values.ts';

/**
 * The conformance suite: every entity the installation registers (plus the test kit's) is held to
 * the same contract, derived from its definition alone. A new entity joins by being registered.
 */
const MODULES = [...allModules, testkitModule];
const ENTITIES = new Registry(MODULES, testConfig()).entities;
const SYSTEM_FIELDS = ['id', 'createdAt', 'updatedAt'] as const;
const UNKNOWN_FIELD = 'conformanceUnknownField';

let app: TestApp;
let customerA: TenantRef;
let customerB: TenantRef;
let counter = 0;
const next = () => ++counter;

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

function expectProblem(res: Problem, status: number, code: string, what: string): void {
  expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(status);
  expect(res.headers['content-type'], what).toMatch(/^application\/problem\+json/);
  expect(res.body.code, what).toBe(code);
}

describe.each(ENTITIES.map((e) => [e.names.key, e] as const))('entity %s', (_key, entity: ResolvedEntity) => {
  const { names, def } = entity;
  const commands = Object.entries(def.commands ?? {});
  const commandPermission = (c: string) => def.commands?.[c]?.permission ?? def.permissions.write;
  const allPermissions = () => [...new Set([def.permissions.read, def.permissions.write, ...commands.map(([c]) => commandPermission(c))])];
  const routeOf = (operation: string): AnyRoute => app.services.registry.routes.find((r) => r.route.operationId === names.operationId(operation))!.route;

  // An entity guarded by an operator permission lives at the operator tenant; any other at a customer.
  let home: TenantRef;
  let other: TenantRef;
  let cookie: string;
  let otherCookie: string;
  let row: Record<string, unknown>;

  const http = (tenant: TenantRef = home) => app.http(hostOf(tenant));
  const itemPath = (id: string) => `${names.path}/${id}`;

  async function createBody(): Promise<Record<string, unknown>> {
    const n = next();
    const body = checkedSample(entity.schemas.create, n, `${names.key} create body`) as Record<string, unknown>;
    const hint = def.sample ? await app.services.transactions.run(home, (ctx) => def.sample!(ctx, n)) : {};
    return { ...body, ...hint };
  }
  const commandBody = (command: string) => {
    const schema = def.commands?.[command]?.body;
    return schema ? (checkedSample(schema, next(), `${names.key} ${command} body`) as Record<string, unknown>) : undefined;
  };
  /** A valid PATCH body changing one field, or undefined when nothing is patchable. */
  function patchBody(current: Record<string, unknown>): Record<string, unknown> | undefined {
    const schemas = (entity.schemas.patch as { properties: Record<string, TSchema> }).properties;
    const fields = Object.keys(schemas);
    if (fields.length === 0) return undefined;
    for (const field of fields) {
      const value = sampleValue(schemas[field]!, next(), `${names.key} patch ${field}`);
      if (JSON.stringify(value) !== JSON.stringify(current[field])) return { [field]: value };
    }
    return { [fields[0]!]: sampleValue(schemas[fields[0]!]!, next()) };
  }

  async function stored(id: string): Promise<Record<string, unknown> | undefined> {
    const { rows } = await app.services.db.pool.query(`select * from "${names.table}" where id = $1`, [id]);
    return rows[0];
  }
  async function events(): Promise<{ id: string; name: string; tenant_id: string; payload: Record<string, unknown> }[]> {
    const { rows } = await app.services.db.pool.query(`select id, name, tenant_id, payload from outbox where tenant_id = any($1) order by id`, [[home.id, other.id]]);
    return rows;
  }
  async function liveRows(): Promise<number> {
    const { rows } = await app.services.db.pool.query(`select count(*)::int as n from "${names.table}" where deleted_at is null`);
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

  beforeAll(async () => {
    const operatorOnly = allPermissions().some(isOperatorPermission);
    home = operatorOnly ? app.operator : customerA;
    other = operatorOnly ? customerA : customerB;
    cookie = (await signInAs(app, home, allPermissions())).cookie;
    otherCookie = (await signInAs(app, other, ['*'])).cookie;
  });

  it('has its five generic routes, its command routes and their operation ids', async () => {
    const doc = (await app.http().get('/api/v1/openapi.json')).body as { paths: Record<string, Record<string, { operationId: string }>> };
    const expected: [string, string, string][] = [
      ['GET', names.path, 'list'],
      ['POST', names.path, 'create'],
      ['GET', `${names.path}/{id}`, 'read'],
      ['PATCH', `${names.path}/{id}`, 'update'],
      ['DELETE', `${names.path}/{id}`, 'delete'],
      ...commands.map(([c]) => ['POST', `${names.path}/{id}/${c}`, c] as [string, string, string]),
    ];
    for (const [method, path, verb] of expected) {
      expect(app.web!.hasRoute({ method: method as 'GET', url: path.replace('{id}', ':id') }), `${method} ${path}`).toBe(true);
      expect(doc.paths[path]?.[method.toLowerCase()]?.operationId, `${method} ${path}`).toBe(`${entity.module}-${entity.name}-${verb}`);
    }
  });

  it('creates a row from a body derived from its schema, publishing its created event in that transaction', async () => {
    const before = (await events()).length;
    const body = await createBody();
    const res = await http().post(names.path).set('Cookie', cookie).send(body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(Value.Check(entity.schemas.row, res.body), JSON.stringify([...Value.Errors(entity.schemas.row, res.body)])).toBe(true);
    row = res.body;
    const published = (await events()).slice(before);
    expect(published.filter((e) => e.name === names.events.created)).toEqual([
      expect.objectContaining({ tenant_id: home.id, payload: expect.objectContaining({ id: row.id }) }),
    ]);
    const declared = routeOf('create').publishes ?? [];
    for (const e of published) expect(declared, `create published ${e.name}`).toContain(e.name);
    expect((await http().get(itemPath(String(row.id))).set('Cookie', cookie)).status).toBe(200);
  });

  it('refuses command-owned, immutable, system and unknown fields on create and PATCH, storing and publishing nothing', async () => {
    const id = String(row.id);
    await writesNothing(id, async () => {
      for (const [field, owners] of Object.entries(entity.commandOwners)) {
        const value = sampleValue(def.fields[field]!, next());
        // Every command writing the field is named: `routes` lists them all, `route` is the first.
        const routes = owners.map((command) => `POST ${names.path}/{id}/${command}`);
        const created = await http().post(names.path).set('Cookie', cookie).send({ ...(await createBody()), [field]: value });
        expectProblem(created, 422, 'FIELD_COMMAND_OWNED', `create with ${field}`);
        const patched = await http().patch(itemPath(id)).set('Cookie', cookie).send({ [field]: value });
        expectProblem(patched, 422, 'FIELD_COMMAND_OWNED', `PATCH with ${field}`);
        for (const refusal of [created, patched]) {
          expect(refusal.body).toMatchObject({ field, route: routes[0], routes });
          for (const route of routes) expect(refusal.body.detail, `${field} refusal names ${route}`).toContain(route);
        }
      }
      for (const field of entity.immutable) {
        const patched = await http().patch(itemPath(id)).set('Cookie', cookie).send({ [field]: sampleValue(def.fields[field]!, next()) });
        expectProblem(patched, 422, 'FIELD_IMMUTABLE', `PATCH with immutable ${field}`);
      }
      for (const field of SYSTEM_FIELDS) {
        const value = field === 'id' ? randomUUID() : new Date().toISOString();
        expect((await http().post(names.path).set('Cookie', cookie).send({ ...(await createBody()), [field]: value })).status, `create with ${field}`).toBe(422);
        expect((await http().patch(itemPath(id)).set('Cookie', cookie).send({ [field]: value })).status, `PATCH with ${field}`).toBe(422);
      }
      const unknownCreate = await http().post(names.path).set('Cookie', cookie).send({ ...(await createBody()), [UNKNOWN_FIELD]: 'x' });
      expectProblem(unknownCreate, 422, 'VALIDATION_FAILED', 'create with an unknown field');
      expect(JSON.stringify(unknownCreate.body.errors)).toContain(UNKNOWN_FIELD);
      const unknownPatch = await http().patch(itemPath(id)).set('Cookie', cookie).send({ ...(patchBody(row) ?? {}), [UNKNOWN_FIELD]: 'x' });
      expectProblem(unknownPatch, 422, 'VALIDATION_FAILED', 'PATCH with an unknown field');
    });
  });

  it('refuses a caller without the permission (403) and an anonymous caller (401), writing nothing', async () => {
    const id = String(row.id);
    const nobody = (await signInAs(app, home, [])).cookie;
    const readerOnly = (await signInAs(app, home, [def.permissions.read])).cookie;
    const patch = patchBody(row);
    const routes: { what: string; permission: string; send: (cookieValue: string | undefined) => Promise<Problem> }[] = [];
    const withCookie = <T extends { set(k: string, v: string): T }>(req: T, c: string | undefined): T => (c ? req.set('Cookie', c) : req);
    const createPayload = await createBody();
    routes.push({ what: 'list', permission: def.permissions.read, send: (c) => withCookie(http().get(names.path), c) });
    routes.push({ what: 'read', permission: def.permissions.read, send: (c) => withCookie(http().get(itemPath(id)), c) });
    routes.push({ what: 'create', permission: def.permissions.write, send: (c) => withCookie(http().post(names.path), c).send(createPayload) });
    if (patch) routes.push({ what: 'PATCH', permission: def.permissions.write, send: (c) => withCookie(http().patch(itemPath(id)), c).send(patch) });
    routes.push({ what: 'DELETE', permission: def.permissions.write, send: (c) => withCookie(http().delete(itemPath(id)), c) });
    for (const [command] of commands) {
      const body = commandBody(command);
      routes.push({
        what: command,
        permission: commandPermission(command),
        send: (c) => (body ? withCookie(http().post(`${itemPath(id)}/${command}`), c).send(body) : withCookie(http().post(`${itemPath(id)}/${command}`), c)),
      });
    }
    await writesNothing(id, async () => {
      for (const route of routes) {
        expectProblem(await route.send(undefined), 401, 'AUTH_REQUIRED', `anonymous ${route.what}`);
        expectProblem(await route.send(nobody), 403, 'AUTH_FORBIDDEN', `${route.what} without any permission`);
        if (route.permission !== def.permissions.read) {
          expectProblem(await route.send(readerOnly), 403, 'AUTH_FORBIDDEN', `${route.what} with only ${def.permissions.read}`);
        }
      }
    });
  });

  it('hides a row from another tenant: read, PATCH, DELETE and commands answer the unknown-id 404, and nothing changes', async () => {
    const id = String(row.id);
    const unknown = await http(other).get(itemPath(randomUUID())).set('Cookie', otherCookie);
    const expectHidden = (res: Problem, permission: string, what: string) => {
      if (isOperatorPermission(permission) && !other.isOperator) return expectProblem(res, 403, 'AUTH_NOT_OPERATOR', what);
      expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(404);
      expect(res.body, what).toEqual(unknown.body);
    };
    await writesNothing(id, async () => {
      expectHidden(await http(other).get(itemPath(id)).set('Cookie', otherCookie), def.permissions.read, 'read from the other tenant');
      const patch = patchBody(row);
      if (patch) expectHidden(await http(other).patch(itemPath(id)).set('Cookie', otherCookie).send(patch), def.permissions.write, 'PATCH from the other tenant');
      expectHidden(await http(other).delete(itemPath(id)).set('Cookie', otherCookie), def.permissions.write, 'DELETE from the other tenant');
      for (const [command] of commands) {
        const body = commandBody(command);
        const req = http(other).post(`${itemPath(id)}/${command}`).set('Cookie', otherCookie);
        expectHidden(await (body ? req.send(body) : req), commandPermission(command), `${command} from the other tenant`);
      }
      if (!isOperatorPermission(def.permissions.read)) {
        const list = await http(other).get(`${names.path}?limit=100`).set('Cookie', otherCookie);
        expect(list.status).toBe(200);
        expect(list.body.items.map((r: { id: string }) => r.id)).not.toContain(id);
      }
    });
  });

  it('publishes an event exactly when a write commits: PATCH, commands, a repeated create, DELETE', async () => {
    const id = String(row.id);
    const step = async (what: string, send: () => Promise<Problem>, declared: readonly string[], committedEvent?: string) => {
      const before = (await events()).length;
      const previous = await stored(id);
      const res = await send();
      if (process.env.CONFORMANCE_TRACE) console.log(names.key, what, res.status);
      expect(res.status, `${what} must not fail unexpectedly: ${JSON.stringify(res.body)}`).toBeLessThan(500);
      const published = (await events()).slice(before);
      if (res.status >= 400) {
        expect(published, `${what} was refused (${res.status}) and must publish nothing`).toEqual([]);
        expect(await stored(id), `${what} was refused and must change nothing`).toEqual(previous);
        return res;
      }
      for (const e of published) expect(declared, `${what} published ${e.name}`).toContain(e.name);
      const changed = JSON.stringify(await stored(id)) !== JSON.stringify(previous);
      if (committedEvent) expect(published.some((e) => e.name === committedEvent), `${what} committed: ${committedEvent}`).toBe(changed || what === 'DELETE');
      if (changed) expect(published.length, `${what} changed the row and must publish`).toBeGreaterThan(0);
      return res;
    };

    const patch = patchBody(row);
    if (patch) await step('PATCH', () => http().patch(itemPath(id)).set('Cookie', cookie).send(patch), routeOf('update').publishes ?? [], names.events.updated);

    const body = await createBody();
    const first = await step('create', () => http().post(names.path).set('Cookie', cookie).send(body), routeOf('create').publishes ?? []);
    expect(first.status).toBe(201);
    // The same body again: a unique key refuses it (nothing published) or it is a second row (one more event).
    await step('repeated create', () => http().post(names.path).set('Cookie', cookie).send(body), routeOf('create').publishes ?? []);

    for (const [command] of commands) {
      const commandRequest = commandBody(command);
      await step(
        command,
        () => {
          const req = http().post(`${itemPath(id)}/${command}`).set('Cookie', cookie);
          return commandRequest ? req.send(commandRequest) : req;
        },
        routeOf(command).publishes ?? [],
      );
    }

    const deleted = await step('DELETE', () => http().delete(itemPath(id)).set('Cookie', cookie), routeOf('delete').publishes ?? [], names.events.deleted);
    expect(deleted.status).toBe(204);
    expect((await stored(id))?.deleted_at).toBeInstanceOf(Date);
    expect((await http().get(itemPath(id)).set('Cookie', cookie)).status).toBe(404);
  });
});

it('covers every entity of the installation and the test kit', () => {
  const keys = ENTITIES.map((e) => e.names.key);
  expect(keys).toContain('testkit.widget');
  for (const module of MODULES) for (const e of module.entities ?? []) expect(keys).toContain(`${e.module}.${e.name}`);
});
