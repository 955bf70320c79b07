import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { allModules } from '../../../modules/index.ts';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import { testkitModule } from '../../helpers/testkit-module.ts';
import { hooksModule } from './hooks-module.ts';
import { outboxEvents, signInWithRoles } from '../user/support.ts';

let app: TestApp;
let operatorCookie: string;
beforeAll(async () => {
  app = await startTestApp({ modules: [...allModules, testkitModule, hooksModule] });
  operatorCookie = (await signInAs(app, app.operator, ['tenant:manage'])).cookie;
});
afterAll(async () => {
  await app?.close();
});

const post = (url: string, body: object, cookie = operatorCookie) =>
  app.http().post(url).set('Cookie', cookie).send(body);

describe('tenant routes', () => {
  it('creates a tenant with its primary host and seeded roles, reads and lists it, and publishes tenant.created', async () => {
    const res = await post('/api/v1/tenant/tenants', { slug: 'acme', name: 'Acme', host: 'Acme.Example.COM' });
    expect(res.status).toBe(201);
    expect(res.headers.location).toBe(`/api/v1/tenant/tenants/${res.body.id}`);
    expect(res.body).toMatchObject({
      slug: 'acme',
      name: 'Acme',
      status: 'active',
      isOperator: false,
      hosts: [{ host: 'acme.example.com', primary: true }],
    });

    const roles = await app.services.transactions.run(
      { id: res.body.id, slug: 'acme', isOperator: false },
      async (ctx) =>
        (
          await ctx.db.executeQuery<{ name: string; permissions: string[] }>(
            CompiledQuery.raw('select name, permissions from roles order by name', []),
          )
        ).rows,
    );
    expect(roles).toEqual([
      { name: 'admin', permissions: ['*'] },
      { name: 'auditor', permissions: ['user:read'] },
      { name: 'member', permissions: [] },
    ]);

    const read = await app.http().get(`/api/v1/tenant/tenants/${res.body.id}`).set('Cookie', operatorCookie);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(res.body);

    const list = await app.http().get('/api/v1/tenant/tenants?limit=100').set('Cookie', operatorCookie);
    expect(list.status).toBe(200);
    expect(list.body.items.map((t: { slug: string }) => t.slug)).toEqual(expect.arrayContaining(['operator', 'acme']));
    expect(list.body.total).toBe(list.body.items.length);

    const events = await outboxEvents(app, 'tenant.created');
    expect(events).toContainEqual(
      expect.objectContaining({ tenantId: app.operator.id, payload: { id: res.body.id, slug: 'acme' } }),
    );
    // The new host serves the new tenant.
    const there = await app.http('acme.example.com').get('/api/v1/user/users');
    expect(there.status).toBe(401);
  });

  it('refuses a taken slug or host with 409 and leaves nothing behind', async () => {
    await createCustomer(app, 'taken');
    const slug = await post('/api/v1/tenant/tenants', { slug: 'taken', name: 'Again', host: 'again.localhost' });
    expect(slug.status).toBe(409);
    expect(slug.body.code).toBe('ALREADY_EXISTS');
    const host = await post('/api/v1/tenant/tenants', { slug: 'other', name: 'Other', host: 'taken.localhost' });
    expect(host.status).toBe(409);
    const { rows } = await app.services.db.pool.query(`select 1 from tenants where slug = 'other'`);
    expect(rows).toHaveLength(0);
  });

  it('validates slug and host', async () => {
    for (const body of [
      { slug: 'Bad Slug', name: 'x', host: 'x.localhost' },
      { slug: 'ok', name: 'x', host: 'https://x.localhost/' },
      { slug: 'ok', name: 'x', host: 'x.localhost:3000' },
      { slug: 'ok', name: '', host: 'x.localhost' },
    ]) {
      const res = await post('/api/v1/tenant/tenants', body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    }
  });

  it('refuses a name of spaces only (stored trimmed, it would be empty) at its pointer, and creates nothing', async () => {
    const res = await post('/api/v1/tenant/tenants', { slug: 'blank', name: '   ', host: 'blank.localhost' });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(res.body.errors).toEqual([{ pointer: '/body/name', message: expect.any(String) }]);
    const { rows } = await app.services.db.pool.query(`select 1 from tenants where slug = 'blank'`);
    expect(rows).toHaveLength(0);
  });

  it('a failing creation hook leaves no tenant, no host and no roles', async () => {
    const res = await post('/api/v1/tenant/tenants', { slug: 'fail-hook', name: 'Fails', host: 'fail-hook.localhost' });
    expect(res.status).toBe(500);
    expect(JSON.stringify(res.body)).not.toMatch(/on purpose|stack/);
    const tenants = await app.services.db.pool.query(`select 1 from tenants where slug = 'fail-hook'`);
    const hosts = await app.services.db.pool.query(`select 1 from tenant_hosts where host = 'fail-hook.localhost'`);
    const roles = await app.services.db.pool.query(
      `select 1 from roles r left join tenants t on t.id = r.tenant_id where t.id is null`,
    );
    expect(tenants.rows).toHaveLength(0);
    expect(hosts.rows).toHaveLength(0);
    expect(roles.rows).toHaveLength(0);
    expect((await outboxEvents(app, 'tenant.created')).some((e) => e.payload.slug === 'fail-hook')).toBe(false);
    expect((await app.http('fail-hook.localhost').get('/api/v1/user/users')).body.code).toBe('NO_SITE');
  });

  it('answers 404 for an unknown or malformed id', async () => {
    expect(
      (
        await app
          .http()
          .get('/api/v1/tenant/tenants/00000000-0000-0000-0000-000000000001')
          .set('Cookie', operatorCookie)
      ).status,
    ).toBe(404);
    expect((await app.http().get('/api/v1/tenant/tenants/nope').set('Cookie', operatorCookie)).status).toBe(404);
    expect((await post('/api/v1/tenant/tenants/00000000-0000-0000-0000-000000000001/suspend', {})).status).toBe(404);
  });

  it('has no PATCH and no DELETE', async () => {
    const customer = await createCustomer(app, 'nopatch');
    expect(
      (
        await app
          .http()
          .patch(`/api/v1/tenant/tenants/${customer.id}`)
          .set('Cookie', operatorCookie)
          .send({ name: 'x' })
      ).status,
    ).toBe(405);
    expect(
      (await app.http().delete(`/api/v1/tenant/tenants/${customer.id}`).set('Cookie', operatorCookie)).status,
    ).toBe(405);
    const ids = app.services.routes
      .filter((r) => r.module === 'tenant')
      .map((r) => `${r.route.method} ${r.route.operationId}`);
    expect(ids.sort()).toEqual([
      'DELETE tenant-tenant-remove-host',
      'GET tenant-export-archive',
      'GET tenant-export-read',
      'GET tenant-tenant-entitlements-read',
      'GET tenant-tenant-list',
      'GET tenant-tenant-read',
      'POST tenant-export-create',
      'POST tenant-tenant-add-host',
      'POST tenant-tenant-create',
      'POST tenant-tenant-invite',
      'POST tenant-tenant-resume',
      'POST tenant-tenant-suspend',
      'PUT tenant-tenant-entitlements-set',
    ]);
  });
});

describe('the tenant list pages like every list', () => {
  const list = (query: string) => app.http().get(`/api/v1/tenant/tenants${query}`).set('Cookie', operatorCookie);

  it('takes limit, offset, sort and after, all optional, and answers items, total, totalExact, limit, offset and next', async () => {
    for (const slug of ['page-c', 'page-a', 'page-b']) await createCustomer(app, slug);
    const all = await list('');
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({
      total: all.body.items.length,
      totalExact: true,
      limit: 20,
      offset: 0,
      next: null,
    });

    const slugs: string[] = [];
    let after: string | null = null;
    do {
      const res = await list(`?limit=2&sort=-slug${after ? `&after=${after}` : ''}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      slugs.push(...res.body.items.map((t: { slug: string }) => t.slug));
      after = res.body.next;
    } while (after);
    expect(slugs).toEqual(
      all.body.items
        .map((t: { slug: string }) => t.slug)
        .sort()
        .reverse(),
    );
    expect(slugs).toEqual(expect.arrayContaining(['page-a', 'page-b', 'page-c']));

    const byName = await list('?sort=name&limit=1&offset=1');
    expect(byName.body).toMatchObject({ limit: 1, offset: 1, total: all.body.total });
  });

  it('refuses an offset past 10000, a sort it does not offer and a cursor it did not give, with 422', async () => {
    // Every field the list filters by sorts (issue 44), status too; hosts (a list of objects) does not.
    for (const query of ['?offset=10001', '?offset=9223372036854775807', '?sort=hosts', '?after=bm9wZQ', '?limit=0']) {
      const res = await list(query);
      expect(res.status, query).toBe(422);
      expect(res.body.code).toBe('VALIDATION_FAILED');
    }
  });
});

describe('tenant:manage is an operator permission', () => {
  it('is refused on a customer host with 403 AUTH_NOT_OPERATOR, even for the customer admin', async () => {
    const customer = await createCustomer(app, 'cust');
    const admin = await signInWithRoles(app, customer, ['admin']);
    for (const [method, url, body] of [
      ['get', '/api/v1/tenant/tenants', undefined],
      ['post', '/api/v1/tenant/tenants', { slug: 'sneaky', name: 'Sneaky', host: 'sneaky.localhost' }],
      ['get', `/api/v1/tenant/tenants/${customer.id}`, undefined],
      ['post', `/api/v1/tenant/tenants/${customer.id}/hosts`, { host: 'sneaky.localhost' }],
      ['post', `/api/v1/tenant/tenants/${customer.id}/invite`, { email: 'sneaky@example.test' }],
      ['post', `/api/v1/tenant/tenants/${customer.id}/suspend`, undefined],
    ] as const) {
      const res = await app.http('cust.localhost')[method](url).set('Cookie', admin.cookie).send(body);
      expect(res.status, url).toBe(403);
      expect(res.body.code).toBe('AUTH_NOT_OPERATOR');
    }
    expect((await app.services.db.pool.query(`select 1 from tenants where slug = 'sneaky'`)).rows).toHaveLength(0);
    expect(
      (await app.services.db.pool.query(`select status from tenants where id = $1`, [customer.id])).rows[0].status,
    ).toBe('active');
  });

  it('needs a session and the permission in the operator tenant', async () => {
    expect((await app.http().get('/api/v1/tenant/tenants')).status).toBe(401);
    const member = await signInWithRoles(app, app.operator, ['member']);
    const res = await app.http().get('/api/v1/tenant/tenants').set('Cookie', member.cookie);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('AUTH_FORBIDDEN');
  });

  it('is held, with billing:catalog, by the operator tenant’s seeded admin role (through the wildcard)', async () => {
    const admin = await signInWithRoles(app, app.operator, ['admin']);
    expect((await app.http().get('/api/v1/tenant/tenants').set('Cookie', admin.cookie)).status).toBe(200);
    const me = await app.http().get('/api/v1/auth/me').set('Cookie', admin.cookie);
    expect(me.body.permissions).toEqual(['*']);
    expect(app.services.registry.isOperatorPermission('tenant:manage')).toBe(true);
    expect(app.services.registry.isOperatorPermission('billing:catalog')).toBe(true);
    // The operator may also name them in a role of its own; a customer may not.
    const named = await app
      .http()
      .put('/api/v1/auth/roles/control')
      .set('Cookie', admin.cookie)
      .send({ permissions: ['tenant:manage', 'billing:catalog'] });
    expect(named.status).toBe(201);
    const customer = await createCustomer(app, 'grants');
    const customerAdmin = await signInWithRoles(app, customer, ['admin']);
    for (const permission of ['tenant:manage', 'billing:catalog']) {
      const refused = await app
        .http('grants.localhost')
        .put('/api/v1/auth/roles/control')
        .set('Cookie', customerAdmin.cookie)
        .send({ permissions: [permission] });
      expect(refused.status).toBe(422);
      expect(refused.body.code).toBe('PERMISSION_OPERATOR_ONLY');
    }
  });
});
