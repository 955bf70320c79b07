import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, createCustomer, signInAs, OPERATOR_HOST, type TestApp } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { buildApp } from '../../framework/app.ts';
import { EVICT_TENANT_SQL } from '../../framework/context/host-cache.ts';
import { evictTenantHosts } from '../../framework/tenancy/control-plane.ts';
import type { HostDirectory } from '../../framework/contracts/services.ts';
import { normaliseHost } from '../../framework/context/tenant.ts';
import { allModules } from '../../modules/index.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { testConfig } from '../helpers/config.ts';
import { withoutRequestId } from '../helpers/problems.ts';

let cookie: string;

const t = useTestApp({ customers: ['acme'] });
beforeAll(async () => {
  cookie = (await signInAs(t.app, t.acme, ['widget:read'])).cookie;
});

/** Suspends a tenant the way the tenant module does: status and eviction in one transaction. */
async function suspend(
  target: TestApp,
  tenantId: string,
  options: { evict: boolean } = { evict: true },
): Promise<void> {
  const client = await target.services.db.pool.connect();
  try {
    await client.query('begin');
    await client.query(`update tenants set status = 'suspended', updated_at = now() where id = $1`, [tenantId]);
    if (options.evict) await client.query(EVICT_TENANT_SQL, [tenantId]);
    await client.query('commit');
  } finally {
    client.release();
  }
}

/** Waits until condition holds, polled by vi.waitFor. */
function poll(condition: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  return vi.waitFor(
    async () => {
      if (!(await condition())) throw new Error('condition not met in time');
    },
    { timeout: timeoutMs, interval: 20 },
  );
}

describe('the Host header is normalised', () => {
  it.each([
    ['acme.localhost', 'acme.localhost'],
    ['ACME.LocalHost', 'acme.localhost'],
    ['acme.localhost:3000', 'acme.localhost'],
    ['Acme.Localhost:8080', 'acme.localhost'],
    ['acme.localhost.', 'acme.localhost'],
    ['[::1]:3000', '[::1]'],
    [undefined, ''],
  ])('%s → %s', (header, expected) => {
    expect(normaliseHost(header)).toBe(expected);
  });

  it('a request with an upper-case host and a port reaches the same tenant', async () => {
    for (const host of ['acme.localhost', 'ACME.LOCALHOST:3000', 'Acme.localhost:443']) {
      const res = await t.app.http(host).get('/api/v1/testkit/widgets').set('Cookie', cookie);
      expect(res.status, host).toBe(200);
    }
  });
});

describe('unknown host and suspended tenant: the identical no-site 404', () => {
  let suspendedHost: string;

  beforeAll(async () => {
    const gone = await createCustomer(t.app, 'gone');
    suspendedHost = 'gone.localhost';
    // Served (and cached) first, so the test also shows the suspension reaches the cache.
    expect((await t.app.http(suspendedHost).get('/api/v1/testkit/widgets')).status).toBe(401);
    await suspend(t.app, gone.id);
    await poll(async () => (await t.app.http(suspendedHost).get('/api/v1/testkit/widgets')).status === 404);
  });

  const probes: [string, string, string?][] = [
    ['GET', '/api/v1/testkit/widgets'],
    ['POST', '/api/v1/testkit/widgets', '{"name": "x"'],
    ['GET', '/api/v1/auth/me'],
    ['GET', '/no/such/route'],
    ['GET', '/admin'],
    ['GET', '/admin/testkit/widgets'],
    ['GET', '/openapi.json'],
  ];

  it.each(probes)('%s %s', async (method, path, body) => {
    const send = async (host: string) => {
      const req =
        method === 'GET'
          ? t.app.http(host).get(path)
          : t.app
              .http(host)
              .post(path)
              .set('Content-Type', 'application/json')
              .send(body ?? '{}');
      return req.set('Cookie', cookie);
    };
    const unknown = await send('nosuch.example');
    const unknownWithPort = await send('NoSuch.Example:8443');
    const suspended = await send(suspendedHost);
    expect(unknown.status).toBe(404);
    expect(unknown.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(unknown.body).toEqual({
      type: 'https://tenantry.dev/problems/NO_SITE',
      title: 'No site',
      status: 404,
      detail: 'There is no site at this host',
      code: 'NO_SITE',
      requestId: unknown.headers['x-request-id'],
    });
    for (const other of [unknownWithPort, suspended]) {
      expect(other.status).toBe(404);
      expect(other.headers['content-type']).toBe(unknown.headers['content-type']);
      // The same answer but for the id of the request it answers.
      expect(withoutRequestId(other.body)).toEqual(withoutRequestId(unknown.body));
      expect(other.body.requestId).toBe(other.headers['x-request-id']);
    }
    // The same path on a served host is not a no-site answer, so the 404 above is the host's doing.
    const served = await send('acme.localhost');
    expect(served.body.code).not.toBe('NO_SITE');
  });

  it('answers before any other work: no session lookup, no body parsing, no route matching', async () => {
    // Malformed JSON would be a 400 and a missing session a 401 on a served host.
    const malformed = await t.app
      .http('nosuch.example')
      .post('/api/v1/testkit/widgets')
      .set('Content-Type', 'application/json')
      .send('{');
    expect(malformed.status).toBe(404);
    expect(malformed.body.code).toBe('NO_SITE');
    const servedMalformed = await t.app
      .http('acme.localhost')
      .post('/api/v1/testkit/widgets')
      .set('Cookie', cookie)
      .set('Content-Type', 'application/json')
      .send('{');
    expect(servedMalformed.status).toBe(400);
  });

  it('a request with no Host header at all is no site', async () => {
    const res = await t.app.web!.inject({ method: 'GET', url: '/api/v1/testkit/widgets', headers: { host: '' } });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('NO_SITE');
  });

  it('the probes answer on any host, unknown and suspended included', async () => {
    for (const host of ['nosuch.example', suspendedHost, '10.1.2.3:3000', OPERATOR_HOST]) {
      expect((await t.app.http(host).get('/health')).status, host).toBe(200);
      expect((await t.app.http(host).get('/ready')).status, host).toBe(200);
    }
  });

  it('lifting the suspension serves the host again with no invalidation needed', async () => {
    const { rows } = await t.app.services.db.pool.query<{ id: string }>(
      `update tenants set status = 'active' where slug = 'gone' returning id`,
    );
    expect(rows).toHaveLength(1);
    expect((await t.app.http(suspendedHost).get('/api/v1/testkit/widgets')).status).toBe(401);
    await suspend(t.app, rows[0]!.id);
  });
});

describe('eviction reaches every process on the database (LISTEN/NOTIFY)', () => {
  let other: TestApp;

  beforeAll(async () => {
    other = await startTestApp({ databaseUrl: t.app.databaseUrl });
  });
  afterAll(async () => {
    await other?.close();
  });

  it('a second instance on the same database starts without creating another operator tenant', async () => {
    expect(other.operator.id).toBe(t.app.operator.id);
    const { rows } = await t.app.services.db.pool.query('select id from tenants where is_operator');
    expect(rows).toHaveLength(1);
  });

  it('a tenant suspended through one instance stops being served by the other', async () => {
    const tenant = await createCustomer(t.app, 'evicted');
    const user = await signInAs(t.app, tenant, ['widget:read']);
    expect(
      (await other.http('evicted.localhost').get('/api/v1/testkit/widgets').set('Cookie', user.cookie)).status,
    ).toBe(200);
    expect(other.services.hosts.cachedHosts()).toContain('evicted.localhost');

    await suspend(t.app, tenant.id);
    await poll(async () => !other.services.hosts.cachedHosts().includes('evicted.localhost'));
    const res = await other.http('evicted.localhost').get('/api/v1/testkit/widgets').set('Cookie', user.cookie);
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('NO_SITE');
  });

  it('without the eviction notice the cache would keep serving: the notice is what stops it', async () => {
    const tenant = await createCustomer(t.app, 'stale');
    const user = await signInAs(t.app, tenant, ['widget:read']);
    expect((await other.http('stale.localhost').get('/api/v1/testkit/widgets').set('Cookie', user.cookie)).status).toBe(
      200,
    );
    await suspend(t.app, tenant.id, { evict: false });
    // Still cached in the other instance (TTL 60 s) because nobody notified it.
    expect((await other.http('stale.localhost').get('/api/v1/testkit/widgets').set('Cookie', user.cookie)).status).toBe(
      200,
    );
    await t.app.services.db.pool.query(EVICT_TENANT_SQL, [tenant.id]);
    await poll(
      async () =>
        (await other.http('stale.localhost').get('/api/v1/testkit/widgets').set('Cookie', user.cookie)).status === 404,
    );
  });
});

describe('the process that commits a change', () => {
  it('evicts its own cache as the commit returns, not when its listener hears the NOTIFY, and not before the commit', async () => {
    const tenant = await createCustomer(t.app, 'ownevict');
    const evicted: string[] = [];
    // A directory that records evictions; the app's listener never calls it, so only the
    // transaction's own after-commit eviction can.
    const directory = { evictTenant: (id: string) => void evicted.push(id) } as unknown as HostDirectory;
    await t.app.services.transactions.run(t.app.operator, async (ctx) => {
      await evictTenantHosts(ctx, directory, tenant.id);
      expect(evicted).toEqual([]);
    });
    expect(evicted).toEqual([tenant.id]);
    // A rolled-back change evicts nothing.
    await expect(
      t.app.services.transactions.run(t.app.operator, async (ctx) => {
        await evictTenantHosts(ctx, directory, tenant.id);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(evicted).toEqual([tenant.id]);
  });
});

describe('the operator tenant on first start', () => {
  it('an empty database gets the operator tenant on server.public_host; the next start reuses it', async () => {
    const databaseUrl = await createTestDatabase();
    const config = testConfig({ server: { public_host: 'Control.Example.com' } });
    const options = {
      config,
      modules: [...allModules, testkitModule],
      databaseUrl,
      role: 'web' as const,
      startWorker: false,
    };
    const first = await buildApp(options);
    const read = async () =>
      (
        await first.services.db.pool.query<{
          id: string;
          slug: string;
          status: string;
          host: string;
          is_primary: boolean;
        }>(
          `select t.id, t.slug, t.status, h.host, h.is_primary from tenants t join tenant_hosts h on h.tenant_id = t.id where t.is_operator`,
        )
      ).rows;
    try {
      const created = await read();
      expect(created).toEqual([
        { id: expect.any(String), slug: 'operator', status: 'active', host: 'control.example.com', is_primary: true },
      ]);
      // Two more starts, at once: no duplicate, the same tenant.
      const again = await Promise.all([buildApp(options), buildApp(options)]);
      await Promise.all(again.map((a) => a.close()));
      expect(await read()).toEqual(created);
      const { rows } = await first.services.db.pool.query('select count(*)::int as n from tenants');
      expect(rows[0].n).toBe(1);
      const health = await first.web!.inject({
        method: 'GET',
        url: '/api/v1/auth/me',
        headers: { host: 'control.example.com' },
      });
      expect(health.json().code).not.toBe('NO_SITE');
    } finally {
      await first.close();
    }
  });

  it('two first starts racing on an empty database create exactly one operator tenant', async () => {
    const databaseUrl = await createTestDatabase();
    const options = {
      config: testConfig(),
      modules: [...allModules, testkitModule],
      databaseUrl,
      role: 'web' as const,
      startWorker: false,
    };
    const apps = await Promise.all([buildApp(options), buildApp(options)]);
    try {
      const { rows } = await apps[0]!.services.db.pool.query<{ host: string }>(
        'select h.host from tenants t join tenant_hosts h on h.tenant_id = t.id where t.is_operator',
      );
      expect(rows).toEqual([{ host: OPERATOR_HOST }]);
    } finally {
      await Promise.all(apps.map((a) => a.close()));
    }
  });
});
