import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { outboxEvents, storedUser } from './support.ts';

let app: TestApp;
let acme: TenantRef;
let manager: string;
beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'acme');
  manager = (await signInAs(app, acme, ['user:manage'])).cookie;
  await app.services.transactions.run(acme, (ctx) =>
    ctx.db.executeQuery(
      CompiledQuery.raw(`insert into roles (name, permissions) values ('reader', '{user:read}'), ('editor', '{}')`, []),
    ),
  );
});
afterAll(async () => {
  await app?.close();
});

const http = () => app.http('acme.localhost');
const setRoles = (id: string, roles: unknown) =>
  http().post(`/api/v1/user/users/${id}/roles`).set('Cookie', manager).send({ roles });
const roleEvents = async (id: string) => (await outboxEvents(app, 'user.roles_set')).filter((e) => e.payload.id === id);

describe('the roles command', () => {
  it('stores the complete set trimmed, lower-cased, deduplicated and sorted, and publishes user.roles_set', async () => {
    const { id } = (
      await http()
        .post('/api/v1/user/invitations')
        .set('Cookie', manager)
        .send({ email: 'ann@acme.test', roles: ['member'] })
    ).body;
    const res = await setRoles(id, ['  Reader', 'EDITOR ', 'reader', 'editor']);
    expect(res.status).toBe(200);
    expect(res.body.roles).toEqual(['editor', 'reader']);
    expect((await storedUser(app, acme, id))!.roles).toEqual(['editor', 'reader']);
    expect(await roleEvents(id)).toEqual([
      expect.objectContaining({ payload: { id, before: ['member'], after: ['editor', 'reader'] } }),
    ]);
  });

  it('the same set in any order or spelling changes nothing and publishes nothing', async () => {
    const { id } = (
      await http()
        .post('/api/v1/user/invitations')
        .set('Cookie', manager)
        .send({ email: 'bob@acme.test', roles: ['reader', 'editor'] })
    ).body;
    const before = (await storedUser(app, acme, id))!;
    const res = await setRoles(id, ['Reader', 'editor', 'EDITOR']);
    expect(res.status).toBe(200);
    expect(res.body.roles).toEqual(['editor', 'reader']);
    const after = (await storedUser(app, acme, id))!;
    expect(after.updated_at.getTime()).toBe(before.updated_at.getTime());
    expect(await roleEvents(id)).toHaveLength(0);
    expect((await outboxEvents(app, 'user.updated')).filter((e) => e.payload.id === id)).toHaveLength(0);
  });

  it('refuses unknown role names with 422 and keeps the set', async () => {
    const { id } = (
      await http()
        .post('/api/v1/user/invitations')
        .set('Cookie', manager)
        .send({ email: 'carl@acme.test', roles: ['editor'] })
    ).body;
    const res = await setRoles(id, ['editor', 'ghost']);
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('ROLE_UNKNOWN');
    expect(res.body.roles).toEqual(['ghost']);
    expect((await storedUser(app, acme, id))!.roles).toEqual(['editor']);
    expect((await setRoles(id, ['   '])).status).toBe(422);
    expect((await setRoles(id, 'editor')).status).toBe(422);
    expect(await roleEvents(id)).toHaveLength(0);
  });

  it('an empty set removes every role; permissions follow the stored roles on the next request', async () => {
    const target = await signInAs(app, acme, []);
    await setRoles(target.userId, ['reader']);
    expect((await http().get('/api/v1/user/users').set('Cookie', target.cookie)).status).toBe(200);
    const res = await setRoles(target.userId, []);
    expect(res.body.roles).toEqual([]);
    expect((await http().get('/api/v1/user/users').set('Cookie', target.cookie)).status).toBe(403);
  });
});
