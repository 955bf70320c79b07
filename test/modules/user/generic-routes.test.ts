import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { outboxEvents, storedUser } from './support.ts';

let app: TestApp;
let acme: TenantRef;
let manager: string;
let reader: string;
beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'acme');
  manager = (await signInAs(app, acme, ['user:read', 'user:manage'])).cookie;
  reader = (await signInAs(app, acme, ['user:read'])).cookie;
});
afterAll(async () => {
  await app?.close();
});

const http = () => app.http('acme.localhost');

describe('the five generic user routes', () => {
  it('creates an invited user, reads, lists, patches and soft-deletes, publishing user.created/updated/deleted', async () => {
    const created = await http()
      .post('/api/v1/user/users')
      .set('Cookie', manager)
      .send({ email: 'ann@acme.test', displayName: 'Ann' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ email: 'ann@acme.test', displayName: 'Ann', status: 'invited', roles: [] });
    const id = created.body.id;

    expect((await http().get(`/api/v1/user/users/${id}`).set('Cookie', reader)).body.email).toBe('ann@acme.test');
    const list = await http().get('/api/v1/user/users?sort=email&limit=100').set('Cookie', reader);
    expect(list.status).toBe(200);
    expect(list.body.items.map((u: { email: string }) => u.email)).toContain('ann@acme.test');

    const patched = await http()
      .patch(`/api/v1/user/users/${id}`)
      .set('Cookie', manager)
      .send({ displayName: 'Ann B.' });
    expect(patched.status).toBe(200);
    expect(patched.body.displayName).toBe('Ann B.');

    expect((await http().delete(`/api/v1/user/users/${id}`).set('Cookie', manager)).status).toBe(204);
    expect((await http().get(`/api/v1/user/users/${id}`).set('Cookie', reader)).status).toBe(404);
    expect((await storedUser(app, acme, id))!.deleted_at).not.toBeNull();

    const names = (await outboxEvents(app)).filter((e) => e.payload.id === id).map((e) => e.name);
    expect(names).toEqual(['user.created', 'user.updated', 'user.deleted']);
  });

  it('refuses status and roles on create and PATCH, naming every route that writes each', async () => {
    const status = await http()
      .post('/api/v1/user/users')
      .set('Cookie', manager)
      .send({ email: 'bob@acme.test', status: 'active' });
    expect(status.status).toBe(422);
    // status has two writers: deactivate and set-password (invited → active); both are named.
    const statusRoutes = ['POST /api/v1/user/users/{id}/deactivate', 'POST /api/v1/user/users/{id}/set-password'];
    expect(status.body).toMatchObject({
      code: 'FIELD_COMMAND_OWNED',
      field: 'status',
      route: statusRoutes[0],
      routes: statusRoutes,
    });
    expect(status.body.detail).toBe(`status is set only by ${statusRoutes[0]} or ${statusRoutes[1]}`);
    const roles = await http()
      .post('/api/v1/user/users')
      .set('Cookie', manager)
      .send({ email: 'bob@acme.test', roles: ['admin'] });
    expect(roles.status).toBe(422);
    expect(roles.body).toMatchObject({
      code: 'FIELD_COMMAND_OWNED',
      field: 'roles',
      route: 'POST /api/v1/user/users/{id}/roles',
      routes: ['POST /api/v1/user/users/{id}/roles'],
    });
    const { rows } = await app.services.db.pool.query(`select 1 from users where email = 'bob@acme.test'`);
    expect(rows).toHaveLength(0);

    const id = (await http().post('/api/v1/user/users').set('Cookie', manager).send({ email: 'carl@acme.test' })).body
      .id;
    for (const body of [{ status: 'active' }, { roles: ['admin'] }, { displayName: 'C', status: 'deactivated' }]) {
      const res = await http().patch(`/api/v1/user/users/${id}`).set('Cookie', manager).send(body);
      expect(res.status).toBe(422);
      expect(res.body.code).toBe('FIELD_COMMAND_OWNED');
    }
    expect(await storedUser(app, acme, id)).toMatchObject({ status: 'invited', roles: [] });
  });

  it('refuses a password or hash in a body, since neither is a field', async () => {
    for (const body of [
      { email: 'dan@acme.test', password: 'secret-secret' },
      { email: 'dan@acme.test', passwordHash: 'x' },
    ]) {
      const res = await http().post('/api/v1/user/users').set('Cookie', manager).send(body);
      expect(res.status).toBe(422);
      expect(res.body.code).toBe('VALIDATION_FAILED');
    }
  });

  it('keeps addresses unique per tenant, case-insensitively, and released by a delete', async () => {
    const first = await http().post('/api/v1/user/users').set('Cookie', manager).send({ email: 'eve@acme.test' });
    expect(first.status).toBe(201);
    const clash = await http().post('/api/v1/user/users').set('Cookie', manager).send({ email: 'EVE@Acme.test' });
    expect(clash.status).toBe(409);
    const other = await http().post('/api/v1/user/users').set('Cookie', manager).send({ email: 'eve2@acme.test' });
    const patchClash = await http()
      .patch(`/api/v1/user/users/${other.body.id}`)
      .set('Cookie', manager)
      .send({ email: 'Eve@acme.test' });
    expect(patchClash.status).toBe(409);
    await http().delete(`/api/v1/user/users/${first.body.id}`).set('Cookie', manager);
    expect(
      (await http().post('/api/v1/user/users').set('Cookie', manager).send({ email: 'Eve@acme.test' })).status,
    ).toBe(201);
  });

  it('guards reads with user:read and writes with user:manage', async () => {
    expect((await http().get('/api/v1/user/users')).status).toBe(401);
    const nobody = (await signInAs(app, acme, [])).cookie;
    expect((await http().get('/api/v1/user/users').set('Cookie', nobody)).status).toBe(403);
    const write = await http().post('/api/v1/user/users').set('Cookie', reader).send({ email: 'fay@acme.test' });
    expect(write.status).toBe(403);
    expect(write.body.code).toBe('AUTH_FORBIDDEN');
    expect(
      (await http().post('/api/v1/user/invitations').set('Cookie', reader).send({ email: 'fay@acme.test' })).status,
    ).toBe(403);
  });
});
