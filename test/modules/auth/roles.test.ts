import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { outbox } from './fixtures.ts';

let app: TestApp;
let acme: TenantRef;
let manager: string;
beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'acme');
  manager = (await signInAs(app, acme, ['role:manage'])).cookie;
});
afterAll(async () => {
  await app?.close();
});

const http = () => app.http('acme.localhost');
const put = (name: string, permissions: unknown, cookie = manager) =>
  http().put(`/api/v1/auth/roles/${name}`).set('Cookie', cookie).send({ permissions });
const roleSetEvents = async (name: string) =>
  (await outbox(app, 'auth.role_set')).filter((e) => e.payload.name === name);

describe('GET /api/v1/auth/roles', () => {
  it('needs role:manage: 401 signed out, 403 without it', async () => {
    expect((await http().get('/api/v1/auth/roles')).status).toBe(401);
    const reader = await signInAs(app, acme, ['user:read']);
    const res = await http().get('/api/v1/auth/roles').set('Cookie', reader.cookie);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('AUTH_FORBIDDEN');
  });

  it("lists this tenant's roles by name, seeded admin and member included", async () => {
    const res = await http().get('/api/v1/auth/roles').set('Cookie', manager);
    expect(res.status).toBe(200);
    const byName = Object.fromEntries(
      res.body.items.map((r: { name: string; permissions: string[] }) => [r.name, r.permissions]),
    );
    expect(byName.admin).toEqual(['*']);
    expect(byName.member).toEqual([]);
    const names = res.body.items.map((r: { name: string }) => r.name);
    expect(names).toEqual([...names].sort());
    expect(Object.keys(res.body.items[0]).sort()).toEqual(['createdAt', 'name', 'permissions', 'updatedAt']);
  });

  it('pages like every list: by name with limit and after=<next>, -name for descending', async () => {
    const all = (await http().get('/api/v1/auth/roles?limit=100').set('Cookie', manager)).body;
    expect(all).toMatchObject({ total: all.items.length, totalExact: true, offset: 0, next: null });
    for (const sort of ['name', '-name']) {
      const names: string[] = [];
      let after: string | null = null;
      do {
        const query: string = `limit=1&sort=${sort}${after ? `&after=${after}` : ''}`;
        const res = await http().get(`/api/v1/auth/roles?${query}`).set('Cookie', manager);
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        names.push(...res.body.items.map((r: { name: string }) => r.name));
        after = res.body.next;
      } while (after);
      const expected = all.items.map((r: { name: string }) => r.name);
      expect(names).toEqual(sort === 'name' ? expected : [...expected].reverse());
    }
  });

  it("shows no other tenant's roles", async () => {
    const globex = await createCustomer(app, 'globex');
    const other = await signInAs(app, globex, ['role:manage']);
    await app
      .http('globex.localhost')
      .put('/api/v1/auth/roles/globex-only')
      .set('Cookie', other.cookie)
      .send({ permissions: [] })
      .expect(201);
    const res = await http().get('/api/v1/auth/roles').set('Cookie', manager);
    expect(res.body.items.map((r: { name: string }) => r.name)).not.toContain('globex-only');
  });
});

describe('PUT /api/v1/auth/roles/{name}', () => {
  it('creates a role (201), stores the list deduplicated and sorted, and publishes auth.role_set with before null', async () => {
    const res = await put('editor', ['user:read', 'role:manage', 'user:read']);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'editor', permissions: ['role:manage', 'user:read'] });
    expect((await roleSetEvents('editor')).map((e) => e.payload)).toEqual([
      { name: 'editor', before: null, after: ['role:manage', 'user:read'] },
    ]);
  });

  it('publishes nothing when the list does not change, and before/after when it does', async () => {
    await put('auditor', ['user:read']).expect(201);
    const same = await put('auditor', ['user:read', 'user:read']);
    expect(same.status).toBe(200);
    expect(await roleSetEvents('auditor')).toHaveLength(1);
    const changed = await put('auditor', ['user:read', 'role:manage']);
    expect(changed.status).toBe(200);
    const events = await roleSetEvents('auditor');
    expect(events).toHaveLength(2);
    expect(events[1]!.payload).toEqual({ name: 'auditor', before: ['user:read'], after: ['role:manage', 'user:read'] });
  });

  it('takes effect on the next request: permissions are resolved from stored roles every time', async () => {
    const person = await signInAs(app, acme, []);
    const roleName = (await http().get('/api/v1/auth/me').set('Cookie', person.cookie)).body.roles[0];
    expect((await http().get('/api/v1/auth/roles').set('Cookie', person.cookie)).status).toBe(403);
    await put(roleName, ['role:manage']).expect(200);
    expect((await http().get('/api/v1/auth/roles').set('Cookie', person.cookie)).status).toBe(200);
    expect((await http().get('/api/v1/auth/me').set('Cookie', person.cookie)).body.permissions).toEqual([
      'role:manage',
    ]);
  });

  it('refuses a permission no module defines with 422 PERMISSION_UNKNOWN', async () => {
    const res = await put('bad', ['user:read', 'user:fly']);
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('PERMISSION_UNKNOWN');
    expect(res.body.errors).toEqual([{ pointer: '/body/permissions/1', message: 'unknown permission user:fly' }]);
    expect(
      (await http().get('/api/v1/auth/roles').set('Cookie', manager)).body.items.map((r: { name: string }) => r.name),
    ).not.toContain('bad');
  });

  it('points at the value sent when a refused permission came with spaces around it (trimmed before it is checked)', async () => {
    const res = await put('padded', ['user:read', ' user:fly ', 'task:fly ']);
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('PERMISSION_UNKNOWN');
    expect(res.body.errors).toEqual([
      { pointer: '/body/permissions/2', message: 'unknown permission task:fly' },
      { pointer: '/body/permissions/1', message: 'unknown permission user:fly' },
    ]);
    const operatorOnly = await put('padded', [' widget:operate']);
    expect(operatorOnly.body.code).toBe('PERMISSION_OPERATOR_ONLY');
    expect(operatorOnly.body.errors).toEqual([
      { pointer: '/body/permissions/0', message: 'operator permission widget:operate' },
    ]);
  });

  it('refuses an operator permission outside the operator tenant with 422 PERMISSION_OPERATOR_ONLY, and accepts it there', async () => {
    const res = await put('ops', ['widget:operate']);
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('PERMISSION_OPERATOR_ONLY');
    const operatorManager = await signInAs(app, app.operator, ['role:manage']);
    const there = await app
      .http()
      .put('/api/v1/auth/roles/ops')
      .set('Cookie', operatorManager.cookie)
      .send({ permissions: ['widget:operate'] });
    expect(there.status).toBe(201);
  });

  it('accepts the wildcard', async () => {
    expect((await put('superuser', ['*'])).status).toBe(201);
  });

  it('refuses a malformed role name and a body other than { permissions }', async () => {
    expect((await put('Not%20Valid', [])).status).toBe(422);
    expect((await http().put('/api/v1/auth/roles/fine').set('Cookie', manager).send({ perms: [] })).status).toBe(422);
    expect(
      (await http().put('/api/v1/auth/roles/fine').set('Cookie', manager).send({ permissions: 'user:read' })).status,
    ).toBe(422);
  });

  it('needs role:manage', async () => {
    const reader = await signInAs(app, acme, ['user:read']);
    expect((await put('sneaky', ['*'], reader.cookie)).status).toBe(403);
  });
});
