import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { eventually, outboxEvents, storedUser } from './support.ts';

let app: TestApp;
let acme: TenantRef;
let manager: string;
beforeAll(async () => {
  // The worker runs, so the sign-in area's subscription on user.deactivated ends the sessions.
  app = await startTestApp({ role: 'all', startWorker: true });
  acme = await createCustomer(app, 'acme');
  manager = (await signInAs(app, acme, ['user:manage'])).cookie;
});
afterAll(async () => {
  await app?.close();
});

const http = () => app.http('acme.localhost');
const deactivate = (id: string) => http().post(`/api/v1/user/users/${id}/deactivate`).set('Cookie', manager);
const sessionCount = async (userId: string) =>
  Number(
    (await app.services.db.pool.query('select count(*) as n from sessions where user_id = $1', [userId])).rows[0].n,
  );

describe('deactivate', () => {
  it('stops sign-in at once, ends the sessions through the sign-in area, and publishes user.deactivated once', async () => {
    const person = await signInAs(app, acme, ['user:read'], { email: 'ann@acme.test' });
    // Setting the password ends the session signInAs opened; two sign-ins open two new ones.
    await http()
      .post(`/api/v1/user/users/${person.userId}/set-password`)
      .set('Cookie', manager)
      .send({ password: 'ann password' });
    const login = await http().post('/api/v1/auth/login').send({ email: 'ann@acme.test', password: 'ann password' });
    expect(login.status).toBe(200);
    expect(
      (await http().post('/api/v1/auth/login').send({ email: 'ann@acme.test', password: 'ann password' })).status,
    ).toBe(200);
    expect(await sessionCount(person.userId)).toBe(2);
    const cookie = (login.headers['set-cookie'] as unknown as string[])
      .find((c) => c.startsWith('app_session='))!
      .split(';', 1)[0]!;
    expect((await http().get('/api/v1/user/users').set('Cookie', cookie)).status).toBe(200);

    const res = await deactivate(person.userId);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('deactivated');

    // The session stops counting immediately, before any subscription has run.
    expect((await http().get('/api/v1/user/users').set('Cookie', cookie)).status).toBe(401);
    const again = await http().post('/api/v1/auth/login').send({ email: 'ann@acme.test', password: 'ann password' });
    expect(again.status).toBe(401);
    expect(again.body.code).toBe('ErrCredentials');

    // The sign-in area deletes the rows when it handles user.deactivated.
    await eventually(async () => (await sessionCount(person.userId)) === 0, 15_000, 'the sessions to end');

    const repeat = await deactivate(person.userId);
    expect(repeat.status).toBe(200);
    expect(repeat.body.status).toBe('deactivated');
    expect(repeat.body.updatedAt).toBe(res.body.updatedAt);
    const events = (await outboxEvents(app, 'user.deactivated')).filter((e) => e.payload.id === person.userId);
    expect(events).toEqual([expect.objectContaining({ tenantId: acme.id, payload: { id: person.userId } })]);
  });

  it('needs user:manage and an existing user of this tenant', async () => {
    const person = await signInAs(app, acme, []);
    expect(
      (await http().post(`/api/v1/user/users/${person.userId}/deactivate`).set('Cookie', person.cookie)).status,
    ).toBe(403);
    expect((await deactivate('00000000-0000-0000-0000-000000000000')).status).toBe(404);
    const globex = await createCustomer(app, 'globex');
    const stranger = await signInAs(app, globex, []);
    expect((await deactivate(stranger.userId)).status).toBe(404);
    expect(await storedUser(app, globex, stranger.userId)).toMatchObject({ status: 'active' });
  });
});
