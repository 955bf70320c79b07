import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import { outboxEvents } from '../user/support.ts';

let app: TestApp;
let cookie: string;
beforeAll(async () => {
  app = await startTestApp();
  cookie = (await signInAs(app, app.operator, ['tenant:manage'])).cookie;
});
afterAll(async () => {
  await app?.close();
});

const addHost = (tenantId: string, body: object) =>
  app.http().post(`/api/v1/tenant/tenants/${tenantId}/hosts`).set('Cookie', cookie).send(body);

describe('adding a host', () => {
  it('adds a plain host unless primary is asked, and the host serves the tenant', async () => {
    const acme = await createCustomer(app, 'acme');
    const res = await addHost(acme.id, { host: 'www.acme.test' });
    expect(res.status).toBe(201);
    expect(res.body.hosts).toEqual([
      { host: 'acme.localhost', primary: true },
      { host: 'www.acme.test', primary: false },
    ]);
    const events = await outboxEvents(app, 'tenant.host_added');
    expect(events.at(-1)).toMatchObject({
      tenantId: app.operator.id,
      payload: { id: acme.id, host: 'www.acme.test', primary: false },
    });
    expect((await app.http('www.acme.test').get('/api/v1/user/users')).status).toBe(401);
  });

  it('moves the primary flag when primary is asked', async () => {
    const beta = await createCustomer(app, 'beta');
    const res = await addHost(beta.id, { host: 'Beta.Example.Org.', primary: true });
    expect(res.status).toBe(201);
    expect(res.body.hosts).toEqual([
      { host: 'beta.example.org', primary: true },
      { host: 'beta.localhost', primary: false },
    ]);
  });

  it('refuses a host that belongs to any tenant with 409', async () => {
    const one = await createCustomer(app, 'one');
    const two = await createCustomer(app, 'two');
    const other = await addHost(two.id, { host: 'one.localhost' });
    expect(other.status).toBe(409);
    expect(other.body.code).toBe('ALREADY_EXISTS');
    const same = await addHost(one.id, { host: 'ONE.localhost', primary: true });
    expect(same.status).toBe(409);
    const operatorHost = await addHost(two.id, { host: 'operator.localhost' });
    expect(operatorHost.status).toBe(409);
    const { rows } = await app.services.db.pool.query(
      'select host, is_primary from tenant_hosts where tenant_id = $1',
      [one.id],
    );
    expect(rows).toEqual([{ host: 'one.localhost', is_primary: true }]);
  });

  it('refuses something that is not a host name', async () => {
    const gamma = await createCustomer(app, 'gamma');
    for (const host of ['http://gamma.test', 'gamma.test/x', 'gamma.test:8080', 'two words', '-bad.test']) {
      const res = await addHost(gamma.id, { host });
      expect(res.status, host).toBe(422);
      expect(res.body.code).toBe('VALIDATION_FAILED');
    }
  });

  it('answers 404 for an unknown tenant', async () => {
    expect((await addHost('00000000-0000-0000-0000-000000000009', { host: 'ghost.test' })).status).toBe(404);
  });
});
