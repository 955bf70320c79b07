import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { addUser, deliverOutbox, sessionCookieOf } from './fixtures.ts';

let app: TestApp;
let acme: TenantRef;
beforeAll(async () => {
  app = await startTestApp({ role: 'all' });
  acme = await createCustomer(app, 'acme');
});
afterAll(async () => {
  await app?.close();
});

describe('user.deactivated', () => {
  it('ends every session of the person through the sign-in area, and only theirs', async () => {
    const manager = await signInAs(app, acme, ['user:manage', 'user:read']);
    const person = await addUser(app, acme);
    const bystander = await addUser(app, acme);
    const login = async (u: { email: string; password: string }) =>
      sessionCookieOf(
        await app.http('acme.localhost').post('/api/v1/auth/login').send({ email: u.email, password: u.password }),
      )!;
    await login(person);
    await login(person);
    const kept = await login(bystander);
    const res = await app
      .http('acme.localhost')
      .post(`/api/v1/user/users/${person.id}/deactivate`)
      .set('Cookie', manager.cookie);
    expect(res.status).toBe(200);
    await deliverOutbox(app);
    const { rows } = await app.services.db.pool.query('select user_id from sessions where user_id = any($1)', [
      [person.id, bystander.id],
    ]);
    expect(rows.map((r) => r.user_id)).toEqual([bystander.id]);
    expect((await app.http('acme.localhost').get('/api/v1/auth/me').set('Cookie', kept)).status).toBe(200);
    const processed = await app.services.db.pool.query(
      `select count(*)::int as n from processed_events where subscription = 'auth-end-sessions-on-deactivation'`,
    );
    expect(processed.rows[0].n).toBe(1);
  });
});
