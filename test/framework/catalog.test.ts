import { beforeAll, describe, expect, it } from 'vitest';
import Type from 'typebox';
import { createCustomer, signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { allModules } from '../../modules/index.ts';
import { defineEntity, defineModule, entity } from '../../framework/entity/define.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { dereferenced } from '../helpers/openapi.ts';

/** An operator-only resource (it borrows the widgets table: only its declaration matters here). */
const ledger = defineEntity({
  module: 'ledgerprobe',
  name: 'ledger',
  storage: { table: 'widgets' },
  fields: { name: Type.String({ minLength: 1 }) },
  permissions: { read: 'widget:operate', write: 'widget:operate' },
});
const ledgerModule = defineModule({ name: 'ledgerprobe', entities: [entity(ledger)] });

const CATALOG = '/api/v1/admin/resources';
const HOST = 'catalog.localhost';
let customer: TenantRef;

interface Entry {
  key: string;
  path: string;
  schema: { properties: Record<string, unknown> };
  writable: string[];
  immutable: string[];
  commandOwned: Record<string, string>;
  operationIds: Record<string, string>;
  endpoints: Record<string, string>;
  scope: 'tenant' | 'global';
  singleton: boolean;
  canWrite: boolean;
}

const TESTKIT = ['testkit.widget', 'testkit.gadget', 'testkit.setting', 'testkit.memo'];

const t = useTestApp({ modules: [...allModules, testkitModule, ledgerModule] });
beforeAll(async () => {
  customer = await createCustomer(t.app, 'catalog', HOST);
});

async function catalog(host: string, permissions: string[]): Promise<Entry[]> {
  const tenant = host === HOST ? customer : t.app.operator;
  const user = await signInAs(t.app, tenant, permissions);
  const res = await t.app.http(host).get(CATALOG).set('Cookie', user.cookie);
  expect(res.status).toBe(200);
  return res.body.resources;
}

describe('GET /api/v1/admin/resources', () => {
  it('needs a session', async () => {
    const res = await t.app.http(HOST).get(CATALOG);
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('AUTH_REQUIRED');
  });

  it('lists a readable resource with its schema, writable and immutable fields', async () => {
    const resources = await catalog(HOST, ['widget:read']);
    expect(resources.map((r) => r.key)).toEqual(TESTKIT);
    const widget = resources[0]!;
    expect(widget).toMatchObject({ scope: 'tenant', singleton: false });
    expect(widget.path).toBe('/api/v1/testkit/widgets');
    expect(Object.keys(widget.schema.properties).sort()).toEqual([
      'approved',
      'approvedAt',
      'color',
      'createdAt',
      'id',
      'name',
      'note',
      'size',
      'updatedAt',
    ]);
    expect([...widget.writable].sort()).toEqual(['color', 'name', 'note', 'size']);
    expect([...widget.immutable].sort()).toEqual(['approved', 'approvedAt', 'color', 'createdAt', 'id', 'updatedAt']);
    expect(widget.commandOwned).toEqual({
      approved: 'POST /api/v1/testkit/widgets/{id}/approve',
      approvedAt: 'POST /api/v1/testkit/widgets/{id}/approve',
    });
    expect(widget.canWrite).toBe(false);
    expect((await catalog(HOST, ['widget:read', 'widget:write']))[0]!.canWrite).toBe(true);
  });

  it('describes a global entity: every tenant reads it, only the operator tenant may write it', async () => {
    const atCustomer = (await catalog(HOST, ['*'])).find((r) => r.key === 'testkit.gadget')!;
    expect(atCustomer).toMatchObject({
      scope: 'global',
      singleton: false,
      path: '/api/v1/testkit/gadgets',
      canWrite: false,
    });
    const atOperator = (await catalog('operator.localhost', ['widget:read', 'widget:operate'])).find(
      (r) => r.key === 'testkit.gadget',
    )!;
    expect(atOperator.canWrite).toBe(true);
  });

  it('describes a singleton by the routes it serves: no list, no create, no id', async () => {
    const setting = (await catalog(HOST, ['widget:read'])).find((r) => r.key === 'testkit.setting')!;
    expect(setting).toMatchObject({ scope: 'tenant', singleton: true, path: '/api/v1/testkit/setting' });
    expect(setting.endpoints).toEqual({
      read: 'GET /api/v1/testkit/setting',
      update: 'PATCH /api/v1/testkit/setting',
      delete: 'DELETE /api/v1/testkit/setting',
      activate: 'POST /api/v1/testkit/setting/activate',
      history: 'GET /api/v1/testkit/setting/history',
      restore: 'POST /api/v1/testkit/setting/restore',
    });
    expect(setting.operationIds).toEqual({
      read: 'testkit-setting-read',
      update: 'testkit-setting-update',
      delete: 'testkit-setting-delete',
      activate: 'testkit-setting-activate',
      history: 'testkit-setting-history',
      restore: 'testkit-setting-restore',
    });
    expect(setting.commandOwned).toEqual({
      activations: 'POST /api/v1/testkit/setting/activate',
      activatedAt: 'POST /api/v1/testkit/setting/activate',
    });
  });

  it('shows computed fields in the row schema and read-only fields as immutable, never writable', async () => {
    const memo = (await catalog(HOST, ['widget:read'])).find((r) => r.key === 'testkit.memo')!;
    expect(Object.keys(memo.schema.properties)).toContain('excerpt');
    expect([...memo.writable].sort()).toEqual(['ownerId', 'text']);
    expect(memo.immutable).toEqual(expect.arrayContaining(['long', 'pinned', 'ownerId']));
  });

  it('omits what the caller may not read', async () => {
    expect(await catalog(HOST, [])).toEqual([]);
    expect(await catalog(HOST, ['widget:write'])).toEqual([]);
  });

  it('omits an operator resource at a customer tenant even for *, and lists it at the operator tenant', async () => {
    const atCustomer = (await catalog(HOST, ['*'])).map((r) => r.key);
    expect(atCustomer).toContain('testkit.widget');
    expect(atCustomer).not.toContain('ledgerprobe.ledger');
    const atOperator = (await catalog('operator.localhost', ['*'])).map((r) => r.key);
    expect(atOperator).toContain('ledgerprobe.ledger');
    expect((await catalog('operator.localhost', ['widget:operate'])).map((r) => r.key)).toEqual(['ledgerprobe.ledger']);
  });

  it('follows the stored roles on every request', async () => {
    const user = await signInAs(t.app, customer, []);
    const keys = async () =>
      (await t.app.http(HOST).get(CATALOG).set('Cookie', user.cookie)).body.resources.map((r: Entry) => r.key);
    expect(await keys()).toEqual([]);
    await t.app.services.db.pool.query(
      `update roles set permissions = '{widget:read}' where tenant_id = $1 and name = (select roles[1] from users where id = $2)`,
      [customer.id, user.userId],
    );
    expect(await keys()).toEqual(TESTKIT);
  });
});

describe('catalog, OpenAPI and registered routes agree', () => {
  it('for every entity: each catalog operation id is in OpenAPI at the route the server registered', async () => {
    const entries = await catalog('operator.localhost', ['*']);
    const doc = await dereferenced(
      (await t.app.http().get('/api/v1/openapi.json')).body as {
        paths: Record<string, Record<string, { operationId: string }>>;
      },
    );
    const openApi = new Map<string, string>();
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods))
        openApi.set(op.operationId, `${method.toUpperCase()} ${path}`);
    }
    const registry = t.app.services.registry;
    expect(entries.map((e) => e.key).sort()).toEqual(registry.entities.map((e) => e.names.key).sort());

    for (const entry of entries) {
      const resolved = registry.entity(entry.key);
      const commands = Object.keys(resolved.def.commands ?? {});
      // Derived from the declaration alone: a collection's five routes, or a singleton's read and declared routes.
      const item = resolved.def.singleton ? entry.path : `${entry.path}/{id}`;
      const generic: Record<string, string> = resolved.def.singleton
        ? {
            read: `GET ${item}`,
            ...Object.fromEntries(
              (resolved.def.singletonRoutes ?? []).map((v) => [
                v,
                `${{ replace: 'PUT', update: 'PATCH', delete: 'DELETE' }[v]} ${item}`,
              ]),
            ),
          }
        : {
            list: `GET ${entry.path}`,
            create: `POST ${entry.path}`,
            read: `GET ${item}`,
            update: `PATCH ${item}`,
            delete: `DELETE ${item}`,
          };
      // History, unless declared off; a singleton restores only through its PATCH.
      const keeps = resolved.def.history !== false;
      const restores = !resolved.def.singleton || (resolved.def.singletonRoutes ?? []).includes('update');
      const expected: Record<string, string> = {
        ...generic,
        ...Object.fromEntries(commands.map((c) => [c, `POST ${item}/${c}`])),
        ...(keeps ? { history: `GET ${item}/history` } : {}),
        ...(keeps && restores ? { restore: `POST ${item}/restore` } : {}),
      };
      expect(entry.endpoints, entry.key).toEqual(expected);
      expect(Object.keys(entry.operationIds).sort()).toEqual(Object.keys(expected).sort());
      for (const [verb, endpoint] of Object.entries(expected)) {
        const id = entry.operationIds[verb]!;
        expect(id).toBe(`${resolved.module}-${resolved.name}-${verb}`);
        expect(openApi.get(id), id).toBe(endpoint);
        const [method, path] = endpoint.split(' ') as [string, string];
        expect(t.app.web!.hasRoute({ method: method as 'GET', url: path.replace('{id}', ':id') }), endpoint).toBe(true);
      }
      for (const [field, route] of Object.entries(entry.commandOwned)) {
        expect(Object.values(expected), `${entry.key}.${field}`).toContain(route);
      }
      const rowSchema = doc.paths[resolved.def.singleton ? entry.path : `${entry.path}/{id}`]!.get as unknown as {
        responses: { 200: { content: { 'application/json': { schema: unknown } } } };
      };
      // The same row schema (OpenAPI rewrites const as enum, so compare its shape).
      const documented = rowSchema.responses[200].content['application/json'].schema as {
        properties: object;
        required: string[];
      };
      const served = entry.schema as unknown as { properties: object; required: string[] };
      expect(Object.keys(served.properties)).toEqual(Object.keys(documented.properties));
      expect(served.required).toEqual(documented.required);
    }
  });
});
