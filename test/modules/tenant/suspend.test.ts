import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import { eventually, outboxEvents } from '../user/support.ts';

let app: TestApp;
let other: TestApp;
let cookie: string;
beforeAll(async () => {
  app = await startTestApp();
  // A second process on the same database, with its own host cache.
  other = await startTestApp({ databaseUrl: app.databaseUrl });
  cookie = (await signInAs(app, app.operator, ['tenant:manage'])).cookie;
});
afterAll(async () => {
  await other?.close();
  await app?.close();
});

const suspend = (id: string) => app.http().post(`/api/v1/tenant/tenants/${id}/suspend`).set('Cookie', cookie);

describe('suspending a tenant', () => {
  it('turns its hosts into no site in every process, once, with one tenant.suspended', async () => {
    const acme = await createCustomer(app, 'acme');
    await app
      .http()
      .post(`/api/v1/tenant/tenants/${acme.id}/hosts`)
      .set('Cookie', cookie)
      .send({ host: 'www.acme.test' });
    for (const process of [app, other]) {
      for (const host of ['acme.localhost', 'www.acme.test']) {
        expect((await process.http(host).get('/api/v1/user/users')).status).toBe(401);
      }
    }
    expect(other.services.hosts.cachedHosts()).toEqual(expect.arrayContaining(['acme.localhost', 'www.acme.test']));

    const res = await suspend(acme.id);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('suspended');

    // The other process dropped both hosts from its cache without being asked directly.
    await eventually(
      async () =>
        !other.services.hosts.cachedHosts().some((h) => h.endsWith('acme.localhost') || h === 'www.acme.test'),
      5000,
      'eviction in the other process',
    );
    await eventually(
      async () => !app.services.hosts.cachedHosts().includes('acme.localhost'),
      5000,
      'eviction in this process',
    );
    for (const process of [app, other]) {
      for (const host of ['acme.localhost', 'www.acme.test']) {
        const gone = await process.http(host).get('/api/v1/user/users');
        expect(gone.status).toBe(404);
        expect(gone.body.code).toBe('NO_SITE');
      }
    }

    const again = await suspend(acme.id);
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('suspended');
    const events = (await outboxEvents(app, 'tenant.suspended')).filter((e) => e.payload.id === acme.id);
    expect(events).toHaveLength(1);
    expect(events[0]!.tenantId).toBe(app.operator.id);

    // The operator still reads it, with its status.
    const read = await app.http().get(`/api/v1/tenant/tenants/${acme.id}`).set('Cookie', cookie);
    expect(read.body.status).toBe('suspended');
  });

  it('leaves other tenants served', async () => {
    const one = await createCustomer(app, 'one');
    const two = await createCustomer(app, 'two');
    await other.http('two.localhost').get('/api/v1/user/users');
    await suspend(one.id);
    expect((await other.http('two.localhost').get('/api/v1/user/users')).status).toBe(401);
    expect((await app.http('two.localhost').get('/api/v1/user/users')).status).toBe(401);
    expect(two.id).not.toBe(one.id);
  });

  it('refuses to suspend the operator tenant', async () => {
    const res = await suspend(app.operator.id);
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('INVALID_STATE');
    expect((await app.http().get('/api/v1/tenant/tenants').set('Cookie', cookie)).status).toBe(200);
  });
});
