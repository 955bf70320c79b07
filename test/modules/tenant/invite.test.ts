import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import { outboxEvents, storedUser } from '../user/support.ts';

let app: TestApp;
let cookie: string;
let operatorUserId: string;
beforeAll(async () => {
  app = await startTestApp();
  const signedIn = await signInAs(app, app.operator, ['tenant:manage']);
  cookie = signedIn.cookie;
  operatorUserId = signedIn.userId;
});
afterAll(async () => {
  await app?.close();
});

const invite = (tenantId: string, body: object) =>
  app.http().post(`/api/v1/tenant/tenants/${tenantId}/invite`).set('Cookie', cookie).send(body);

describe('inviting a tenant’s first administrator', () => {
  it('creates an invited user holding admin in that tenant and publishes user.invited there', async () => {
    const acme = await createCustomer(app, 'acme');
    const res = await invite(acme.id, { email: 'Boss@Acme.test', displayName: 'The Boss' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      email: 'Boss@Acme.test',
      displayName: 'The Boss',
      status: 'invited',
      roles: ['admin'],
    });
    expect(JSON.stringify(res.body)).not.toMatch(/password|hash/i);

    const stored = await storedUser(app, acme, res.body.id);
    expect(stored).toMatchObject({ status: 'invited', roles: ['admin'], password_hash: null });
    // Not in the operator tenant.
    expect(await storedUser(app, app.operator, res.body.id)).toBeUndefined();

    const events = (await outboxEvents(app, 'user.invited')).filter((e) => e.payload.id === res.body.id);
    // In the customer's tenant the operator acts as the operator: none of its people is named there.
    expect(events).toEqual([{ name: 'user.invited', tenantId: acme.id, payload: { id: res.body.id }, actorId: null }]);
    const { rows: actors } = await app.services.db.pool.query(
      `select actor_kind, actor_name from outbox where name = 'user.invited' and payload->>'id' = $1`,
      [res.body.id],
    );
    expect(actors).toEqual([{ actor_kind: 'operator', actor_name: null }]);
    expect(JSON.stringify(events)).not.toContain(operatorUserId);
  });

  it('refuses an address already present in the tenant, in any letter case, with 409', async () => {
    const beta = await createCustomer(app, 'beta');
    expect((await invite(beta.id, { email: 'admin@beta.test' })).status).toBe(201);
    const again = await invite(beta.id, { email: 'ADMIN@beta.test' });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('ALREADY_EXISTS');
    const { rows } = await app.services.db.pool.query('select count(*)::int as n from users where tenant_id = $1', [
      beta.id,
    ]);
    expect(rows[0].n).toBe(1);
    // The same address in another tenant is another person.
    const gamma = await createCustomer(app, 'gamma');
    expect((await invite(gamma.id, { email: 'admin@beta.test' })).status).toBe(201);
  });

  it('refuses an unknown tenant (404), a suspended one (409) and a malformed address (422)', async () => {
    expect((await invite('00000000-0000-0000-0000-00000000000a', { email: 'a@b.test' })).status).toBe(404);
    const delta = await createCustomer(app, 'delta');
    await app.http().post(`/api/v1/tenant/tenants/${delta.id}/suspend`).set('Cookie', cookie);
    const suspended = await invite(delta.id, { email: 'a@delta.test' });
    expect(suspended.status).toBe(409);
    expect(suspended.body.code).toBe('INVALID_STATE');
    const bad = await invite(delta.id, { email: 'not an address' });
    expect(bad.status).toBe(422);
    const extra = await invite(delta.id, { email: 'a@delta.test', roles: ['member'] });
    expect(extra.status).toBe(422);
  });
});
