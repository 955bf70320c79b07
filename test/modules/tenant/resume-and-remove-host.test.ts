import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import { eventually, outboxEvents } from '../user/support.ts';

let app: TestApp;
let cookie: string;
beforeAll(async () => {
  app = await startTestApp();
  cookie = (await signInAs(app, app.operator, ['tenant:manage'])).cookie;
});
afterAll(async () => {
  await app?.close();
});

const post = (path: string, body?: object) =>
  app
    .http()
    .post(`/api/v1/tenant/tenants${path}`)
    .set('Cookie', cookie)
    .send(body ?? {});
const remove = (id: string, host: string) =>
  app
    .http()
    .delete(`/api/v1/tenant/tenants/${id}/hosts/${encodeURIComponent(host)}`)
    .set('Cookie', cookie);

describe('resuming a suspended tenant', () => {
  it('serves its hosts again, with one tenant.resumed', async () => {
    const acme = await createCustomer(app, 'acme');
    expect((await app.http('acme.localhost').get('/api/v1/user/users')).status).toBe(401);
    expect((await post(`/${acme.id}/suspend`)).status).toBe(200);
    await eventually(
      async () => (await app.http('acme.localhost').get('/api/v1/user/users')).status === 404,
      5000,
      'suspension served',
    );

    const res = await post(`/${acme.id}/resume`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('active');
    expect((await app.http('acme.localhost').get('/api/v1/user/users')).status).toBe(401);

    const again = await post(`/${acme.id}/resume`);
    expect(again.status).toBe(200);
    expect((await outboxEvents(app, 'tenant.resumed')).filter((e) => e.payload.id === acme.id)).toHaveLength(1);
  });

  it('answers 404 for an unknown tenant', async () => {
    const res = await post('/00000000-0000-4000-8000-000000000000/resume');
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('NOT_FOUND');
  });
});

describe('removing a host', () => {
  it('stops serving it at once and frees it for another tenant', async () => {
    const beta = await createCustomer(app, 'beta');
    await post(`/${beta.id}/hosts`, { host: 'www.beta.test' });
    expect((await app.http('www.beta.test').get('/api/v1/user/users')).status).toBe(401);
    expect(app.services.hosts.cachedHosts()).toContain('www.beta.test');

    const res = await remove(beta.id, 'WWW.Beta.Test');
    expect(res.status).toBe(200);
    expect(res.body.hosts).toEqual([{ host: 'beta.localhost', primary: true }]);
    await eventually(async () => !app.services.hosts.cachedHosts().includes('www.beta.test'), 5000, 'eviction');
    const gone = await app.http('www.beta.test').get('/api/v1/user/users');
    expect(gone.status).toBe(404);
    expect(gone.body.code).toBe('NO_SITE');
    expect((await outboxEvents(app, 'tenant.host_removed')).at(-1)).toMatchObject({
      payload: { id: beta.id, host: 'www.beta.test' },
    });

    const gamma = await createCustomer(app, 'gamma');
    expect((await post(`/${gamma.id}/hosts`, { host: 'www.beta.test' })).status).toBe(201);
  });

  it('makes the oldest remaining host primary when the primary goes', async () => {
    const delta = await createCustomer(app, 'delta');
    await post(`/${delta.id}/hosts`, { host: 'two.delta.test' });
    await post(`/${delta.id}/hosts`, { host: 'three.delta.test' });
    const res = await remove(delta.id, 'delta.localhost');
    expect(res.status).toBe(200);
    expect(res.body.hosts).toEqual([
      { host: 'two.delta.test', primary: true },
      { host: 'three.delta.test', primary: false },
    ]);
  });

  it('refuses to remove the last host', async () => {
    const eps = await createCustomer(app, 'eps');
    const res = await remove(eps.id, 'eps.localhost');
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('INVALID_STATE');
    expect((await app.http('eps.localhost').get('/api/v1/user/users')).status).toBe(401);
  });

  it('answers 404 for a host of another tenant, which keeps it', async () => {
    const zeta = await createCustomer(app, 'zeta');
    const eta = await createCustomer(app, 'eta');
    await post(`/${eta.id}/hosts`, { host: 'www.eta.test' });
    const res = await remove(zeta.id, 'eta.localhost');
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('NOT_FOUND');
    expect((await app.http('eta.localhost').get('/api/v1/user/users')).status).toBe(401);
  });
});
