import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import type { TxContext } from '../../framework/context/tx.ts';
import { hashSecret } from '../../framework/access/session-cookie.ts';
import { dashboardCards } from '../../framework/admin/pages/dashboard-data.ts';
import { permissionChoices, postedPermissions } from '../../modules/auth/roles.admin-data.ts';
import { requestPort, switcherPage } from '../../modules/tenant/tenants.admin-data.ts';
import { findCheck, runCheck } from '../../framework/admin/pages/health-data.ts';
import { databaseCheck } from '../../framework/http/probes.ts';

let app: TestApp;
let acme: TenantRef;

beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'acme');
});
afterAll(async () => {
  await app?.close();
});

/** Runs fn in acme's transaction as a caller holding exactly these permissions. */
async function asCaller<T>(tenant: TenantRef, permissions: string[], fn: (tx: TxContext) => Promise<T>): Promise<T> {
  const { rawSessionId } = await signInAs(app, tenant, permissions);
  return app.services.transactions.run(tenant, fn, { sessionHash: hashSecret(rawSessionId) });
}

const catalogKeys = async (tenant: TenantRef, host: string, permissions: string[]) => {
  const { cookie } = await signInAs(app, tenant, permissions);
  const res = await app.http(host).get('/api/v1/admin/resources').set('Cookie', cookie);
  return res.body.resources.map((r: { key: string }) => r.key);
};

describe('dashboard: a card per readable resource with the count its list reports', () => {
  it('lists the same resources as GET /api/v1/admin/resources, for a narrow and a wide caller', async () => {
    for (const permissions of [['task:read'], ['task:read', 'content:read', 'billing:read'], ['*']]) {
      const cards = await asCaller(acme, permissions, (tx) => dashboardCards(tx, app.services));
      expect(cards.map((c) => c.key)).toEqual(await catalogKeys(acme, 'acme.localhost', permissions));
    }
  });

  it('counts what the list reports, row access included, inside the one request transaction', async () => {
    const { cookie } = await signInAs(app, acme, ['*']);
    for (const title of ['One', 'Two', 'Three']) {
      await app
        .http('acme.localhost')
        .post('/api/v1/task/tasks')
        .set('Cookie', cookie)
        .send({ title, priority: 'low', deadline: '2099-01-01T00:00:00Z' })
        .expect(201);
    }
    const listed = await app.http('acme.localhost').get('/api/v1/task/tasks?limit=1').set('Cookie', cookie);
    // A pool checkout from inside the transaction would throw PoolInsideTransactionError here.
    const cards = await asCaller(acme, ['task:read'], (tx) => dashboardCards(tx, app.services));
    expect(cards).toEqual([expect.objectContaining({ key: 'task.task', count: listed.body.total, countExact: true })]);
    expect(listed.body.total).toBe(3);
  });

  it('a singleton (the subscription) has a card and no count', async () => {
    const cards = await asCaller(acme, ['billing:read'], (tx) => dashboardCards(tx, app.services));
    expect(cards.find((c) => c.key === 'billing.subscription')).toMatchObject({ count: null });
    expect(cards.find((c) => c.key === 'billing.plan')?.count).toEqual(expect.any(Number));
  });
});

describe('tenant switcher data: every tenant with its hosts and its primary host’s /admin', () => {
  it('links each tenant to /admin on its primary host, keeping the port of a local name', async () => {
    const page = await asCaller(app.operator, ['tenant:manage'], (tx) =>
      switcherPage(tx, { limit: 100, offset: 0, sort: 'createdAt' }, 8123),
    );
    const acmeRow = page.items.find((t) => t.slug === 'acme');
    expect(acmeRow).toMatchObject({
      status: 'active',
      primaryHost: 'acme.localhost',
      adminUrl: 'http://acme.localhost:8123/admin',
    });
    expect(page.items.map((t) => t.slug)).toContain(app.operator.slug);
  });

  it('reads the port from the Host header, else the configured one', () => {
    expect(requestPort('acme.localhost:4321', 3000)).toBe(4321);
    expect(requestPort('acme.localhost', 3000)).toBe(3000);
  });
});

describe('health data: one readiness check at a time', () => {
  it('finds a check by name and runs it', async () => {
    const checks = [databaseCheck(app.services)];
    expect(findCheck(checks, 'nope')).toBeUndefined();
    expect(await runCheck(findCheck(checks, 'database')!)).toMatchObject({ name: 'database', ok: true });
    const failing = await runCheck({
      name: 'queue',
      check: async () => {
        throw new Error('down');
      },
    });
    expect(failing).toMatchObject({ name: 'queue', ok: false, error: 'down' });
  });
});

describe('role form data: one checkbox per permission the modules define', () => {
  it('offers the wildcard and every declared permission, ticks the held ones, and disables operator ones in a customer tenant', () => {
    const registry = app.services.registry;
    const choices = permissionChoices(registry, acme, ['task:read']);
    expect(choices.map((c) => c.name)).toEqual(['*', ...registry.permissions.keys()]);
    expect(choices.filter((c) => c.checked).map((c) => c.name)).toEqual(['task:read']);
    expect(choices.find((c) => c.name === 'tenant:manage')).toMatchObject({ operator: true, disabled: true });
    expect(permissionChoices(registry, app.operator, []).find((c) => c.name === 'tenant:manage')).toMatchObject({
      disabled: false,
    });
  });

  it('puts a refusal from the problem document beside the box it names', () => {
    const posted = ['task:read', 'tenant:manage'];
    const choices = permissionChoices(app.services.registry, acme, posted, [
      { pointer: '/body/permissions/1', message: 'operator permission tenant:manage' },
    ]);
    expect(choices.find((c) => c.name === 'tenant:manage')?.error).toBe('operator permission tenant:manage');
    expect(choices.filter((c) => c.error)).toHaveLength(1);
  });

  it('reads ticked boxes as a list: none, one or several', () => {
    expect(postedPermissions({})).toEqual([]);
    expect(postedPermissions({ permissions: 'task:read' })).toEqual(['task:read']);
    expect(postedPermissions({ permissions: ['task:read', 'user:read'] })).toEqual(['task:read', 'user:read']);
  });
});
