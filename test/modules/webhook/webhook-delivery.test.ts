import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../../helpers/app.ts';
import { testConfig } from '../../helpers/config.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { generateSecret, verifySignature } from '../../../modules/webhook/signing.ts';
import { startReceiver, type Received } from './receiver.ts';
import '../../../modules/webhook/webhook-tables.ts';

let app: TestApp;
let acme: TenantRef;
let globex: TenantRef;
let acmeAdmin: SignedIn;
let globexAdmin: SignedIn;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const ENDPOINTS = '/api/v1/webhook/endpoints';
const acmeHost = 'hooks-acme.localhost';
const globexHost = 'hooks-globex.localhost';

beforeAll(async () => {
  receiver = await startReceiver();
  // Loopback receivers: private networks and plain http allowed here; a 1 s first retry.
  app = await startTestApp({
    ...(process.env.WH_DEBUG ? { logger: (await import('pino')).default({ level: 'warn' }) as never } : {}),
    role: 'all',
    startWorker: true,
    config: testConfig({ webhooks: { allow_http: true, allow_private_networks: true, retry_base_ms: 1000 } }),
  });
  acme = await createCustomer(app, 'hooks-acme');
  globex = await createCustomer(app, 'hooks-globex');
  acmeAdmin = await signInAs(app, acme, ['webhook:manage', 'task:read', 'task:update']);
  globexAdmin = await signInAs(app, globex, ['webhook:manage', 'task:read', 'task:update']);
});
afterAll(async () => {
  await app?.close();
  await receiver?.close();
});

const createEndpoint = async (host: string, who: SignedIn, body: Record<string, unknown>) => {
  const res = await app.http(host).post(ENDPOINTS).set('Cookie', who.cookie).send(body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; signingSecret: string };
};
const createTask = async (host: string, who: SignedIn) => {
  const res = await app
    .http(host)
    .post('/api/v1/task/tasks')
    .set('Cookie', who.cookie)
    .send({ title: 'Ship it', priority: 'high', deadline: new Date(Date.now() + 86400_000).toISOString() });
  expect(res.status).toBe(201);
  return res.body.id as string;
};
/** The endpoint's attempts from the tenant's delivery log, newest first. */
const deliveries = async (host: string, who: SignedIn, endpointId: string) => {
  const res = await app.http(host).get('/api/v1/webhook/deliveries?limit=100').set('Cookie', who.cookie);
  expect(res.status).toBe(200);
  return { ...res, body: { items: res.body.items.filter((d: { endpointId: string }) => d.endpointId === endpointId) } };
};
const check = (r: Received, secret: string) =>
  verifySignature(
    secret,
    {
      id: String(r.headers['webhook-id']),
      timestamp: String(r.headers['webhook-timestamp']),
      signature: String(r.headers['webhook-signature']),
    },
    r.body,
    Math.floor(Date.now() / 1000),
  );

describe('outgoing webhooks', () => {
  it('a task create reaches the receiver with a valid signature; the secret is shown once', async () => {
    const endpoint = await createEndpoint(acmeHost, acmeAdmin, {
      url: receiver.url('/tasks'),
      events: ['task.task.created'],
      description: 'tasks',
    });
    expect(endpoint.signingSecret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    const read = await app.http(acmeHost).get(`${ENDPOINTS}/${endpoint.id}`).set('Cookie', acmeAdmin.cookie);
    expect(read.status).toBe(200);
    expect(read.body.signingSecret).toBeNull();
    expect(JSON.stringify(read.body)).not.toContain(endpoint.signingSecret);

    const taskId = await createTask(acmeHost, acmeAdmin);
    const got = await vi.waitFor(
      () => {
        const hit = receiver.at('/tasks').find((r) => JSON.parse(r.body).data.id === taskId);
        if (!hit) throw new Error('not delivered yet');
        return hit;
      },
      { timeout: 15_000, interval: 100 },
    );
    const message = JSON.parse(got.body);
    expect(message).toMatchObject({ type: 'task.task.created', tenant: acme.id, data: { id: taskId } });
    expect(Object.keys(message).sort()).toEqual(['createdAt', 'data', 'id', 'tenant', 'type']);
    expect(got.headers['webhook-id']).toBe(message.id);
    expect(Math.abs(Number(got.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    expect(got.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(check(got, endpoint.signingSecret)).toBe(true);
    // A wrong secret, a changed body, and a stale timestamp fail the documented check.
    expect(check(got, generateSecret())).toBe(false);
    expect(
      check({ ...got, body: got.body.replace(taskId, '00000000-0000-4000-8000-000000000000') }, endpoint.signingSecret),
    ).toBe(false);
    expect(
      verifySignature(
        endpoint.signingSecret,
        {
          id: message.id,
          timestamp: String(got.headers['webhook-timestamp']),
          signature: String(got.headers['webhook-signature']),
        },
        got.body,
        Number(got.headers['webhook-timestamp']) + 600,
      ),
    ).toBe(false);
  });

  it('a receiver answering 500 twice then 200 gets three attempts, and the log shows them', async () => {
    receiver.answer('/flaky', 500, 500);
    const endpoint = await createEndpoint(acmeHost, acmeAdmin, {
      url: receiver.url('/flaky'),
      events: ['task.task.created'],
    });
    const taskId = await createTask(acmeHost, acmeAdmin);
    const mine = () => receiver.at('/flaky').filter((r) => JSON.parse(r.body).data.id === taskId);
    await vi.waitFor(() => expect(mine()).toHaveLength(3), { timeout: 25_000, interval: 200 });
    expect(new Set(mine().map((r) => r.headers['webhook-id'])).size).toBe(1);
    const log = await vi.waitFor(
      async () => {
        const res = await deliveries(acmeHost, acmeAdmin, endpoint.id);
        expect(res.body.items).toHaveLength(3);
        return res.body.items as {
          attempt: number;
          status: string;
          httpStatus: number;
          error: string | null;
          event: string;
          durationMs: number;
        }[];
      },
      { timeout: 5_000, interval: 100 },
    );
    expect(log.map((d) => [d.attempt, d.status, d.httpStatus])).toEqual([
      [3, 'succeeded', 200],
      [2, 'failed', 500],
      [1, 'failed', 500],
    ]);
    expect(log[2]!.error).toBe('answered 500');
    expect(log.every((d) => d.event === 'task.task.created' && d.durationMs >= 0)).toBe(true);
  });

  it('another tenant’s endpoint never receives the event, nor sees the endpoint or its log', async () => {
    const acmeEndpoint = await createEndpoint(acmeHost, acmeAdmin, { url: receiver.url('/acme-all'), events: ['*'] });
    await createEndpoint(globexHost, globexAdmin, { url: receiver.url('/globex-all'), events: ['*'] });
    const taskId = await createTask(acmeHost, acmeAdmin);
    await vi.waitFor(
      () => expect(receiver.at('/acme-all').some((r) => JSON.parse(r.body).data.id === taskId)).toBe(true),
      { timeout: 15_000, interval: 100 },
    );
    // The relay moved the event long ago; give the fan-out a moment more, then look.
    await new Promise((r) => setTimeout(r, 1000));
    expect(receiver.at('/globex-all').filter((r) => JSON.parse(r.body).tenant !== globex.id)).toEqual([]);
    expect(receiver.at('/globex-all').some((r) => r.body.includes(taskId))).toBe(false);
    expect(
      (await app.http(globexHost).get(`${ENDPOINTS}/${acmeEndpoint.id}`).set('Cookie', globexAdmin.cookie)).status,
    ).toBe(404);
    expect((await deliveries(acmeHost, acmeAdmin, acmeEndpoint.id)).body.items.length).toBeGreaterThan(0);
    expect((await deliveries(globexHost, globexAdmin, acmeEndpoint.id)).body.items).toEqual([]);
    const list = await app.http(globexHost).get(ENDPOINTS).set('Cookie', globexAdmin.cookie);
    expect(list.body.items.map((e: { id: string }) => e.id)).not.toContain(acmeEndpoint.id);
  });

  it('a receiver that redirects is not followed, even to an address it may reach; the log says why', async () => {
    receiver.redirect('/moved', receiver.url('/target'));
    const endpoint = await createEndpoint(acmeHost, acmeAdmin, {
      url: receiver.url('/moved'),
      events: ['task.task.created'],
    });
    await createTask(acmeHost, acmeAdmin);
    const log = await vi.waitFor(
      async () => {
        const res = await deliveries(acmeHost, acmeAdmin, endpoint.id);
        expect(res.body.items.length).toBeGreaterThan(0);
        return res.body.items;
      },
      { timeout: 15_000, interval: 100 },
    );
    expect(log.at(-1)).toMatchObject({
      status: 'failed',
      httpStatus: 302,
      error: 'answered 302: redirects are not followed',
    });
    expect(receiver.at('/target')).toEqual([]);
  });

  it('send-test-event delivers a webhook.test message; send-again repeats a logged one with the same Webhook-Id', async () => {
    const endpoint = await createEndpoint(acmeHost, acmeAdmin, {
      url: receiver.url('/commands'),
      events: ['task.task.deleted'],
    });
    const test = await app
      .http(acmeHost)
      .post(`${ENDPOINTS}/${endpoint.id}/send-test-event`)
      .set('Cookie', acmeAdmin.cookie);
    expect(test.status).toBe(200);
    // It answers the delivery's id: the id its first attempt has in the log.
    expect(test.body.deliveryId).toMatch(/^[0-9a-f-]{36}$/);
    const first = await vi.waitFor(
      () => {
        const hit = receiver.at('/commands')[0];
        if (!hit) throw new Error('no test event yet');
        return hit;
      },
      { timeout: 15_000, interval: 100 },
    );
    expect(JSON.parse(first.body)).toMatchObject({ type: 'webhook.test', data: { endpointId: endpoint.id } });
    expect(check(first, endpoint.signingSecret)).toBe(true);
    const [logged] = (
      await vi.waitFor(async () => {
        const res = await deliveries(acmeHost, acmeAdmin, endpoint.id);
        expect(res.body.items).toHaveLength(1);
        return res;
      })
    ).body.items;
    expect(logged.id).toBe(test.body.deliveryId);
    const again = await app
      .http(acmeHost)
      .post(`${ENDPOINTS}/${endpoint.id}/send-again`)
      .set('Cookie', acmeAdmin.cookie)
      .send({ deliveryId: logged.id });
    expect(again.status).toBe(200);
    await vi.waitFor(() => expect(receiver.at('/commands')).toHaveLength(2), { timeout: 15_000, interval: 100 });
    expect(receiver.at('/commands')[1]!.headers['webhook-id']).toBe(first.headers['webhook-id']);
    const unknown = await app
      .http(acmeHost)
      .post(`${ENDPOINTS}/${endpoint.id}/send-again`)
      .set('Cookie', acmeAdmin.cookie)
      .send({ deliveryId: '0190c4c4-0000-7000-8000-000000000000' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('NOT_FOUND');
  });

  it('rotate-secret answers the new secret once; during the overlap both secrets sign', async () => {
    const endpoint = await createEndpoint(acmeHost, acmeAdmin, {
      url: receiver.url('/rotated'),
      events: ['task.task.created'],
    });
    const rotated = await app
      .http(acmeHost)
      .post(`${ENDPOINTS}/${endpoint.id}/rotate-secret`)
      .set('Cookie', acmeAdmin.cookie)
      .send({ overlapHours: 1 });
    expect(rotated.status).toBe(200);
    const fresh = rotated.body.signingSecret as string;
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(endpoint.signingSecret);
    const taskId = await createTask(acmeHost, acmeAdmin);
    const got = await vi.waitFor(
      () => {
        const hit = receiver.at('/rotated').find((r) => r.body.includes(taskId));
        if (!hit) throw new Error('not delivered yet');
        return hit;
      },
      { timeout: 15_000, interval: 100 },
    );
    expect(String(got.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(check(got, fresh)).toBe(true);
    expect(check(got, endpoint.signingSecret)).toBe(true);
  });

  it('a slow endpoint holds at most 2 deliveries at once and does not delay another endpoint', async () => {
    // The slow endpoint answers nothing until released: held for as long as the fast one takes
    // (under the attempt's 10 s limit), however loaded the machine.
    const release = receiver.hold('/slow');
    await createEndpoint(acmeHost, acmeAdmin, { url: receiver.url('/slow'), events: ['task.task.created'] });
    await createEndpoint(acmeHost, acmeAdmin, { url: receiver.url('/fast'), events: ['task.task.created'] });
    const ids = await Promise.all(Array.from({ length: 6 }, () => createTask(acmeHost, acmeAdmin)));
    const got = (path: string) => receiver.at(path).filter((r) => ids.includes(JSON.parse(r.body).data.id)).length;
    // All six reach the fast endpoint while the slow one is still on its first two.
    try {
      await vi.waitFor(() => expect(got('/fast')).toBe(6), { timeout: 9_000, interval: 50 });
      expect(got('/slow')).toBeLessThanOrEqual(2);
    } finally {
      release();
    }
    await vi.waitFor(() => expect(got('/slow')).toBe(6), { timeout: 30_000, interval: 200 });
    expect(receiver.mostAtOnce('/slow')).toBe(2);
  }, 60_000);

  it('the purge job removes attempts older than 30 days and keeps the rest', async () => {
    const endpoint = await createEndpoint(acmeHost, acmeAdmin, {
      url: receiver.url('/purge'),
      events: ['task.task.deleted'],
    });
    const row = (days: number) => ({
      endpoint_id: endpoint.id,
      message_id: `m-${days}`,
      event_type: 'webhook.test',
      message_created_at: new Date(),
      data: '{}',
      attempt: 1,
      status: 'succeeded' as const,
      http_status: 200,
      duration_ms: 1,
      error: null,
      created_at: new Date(Date.now() - days * 86400_000),
    });
    await app.services.transactions.run(acme, (ctx) =>
      ctx.db
        .insertInto('webhook_deliveries')
        .values([row(31), row(29)])
        .execute(),
    );
    await app.worker!.jobs.runOnce('webhook-delivery-log-purge', { tenant: acme });
    const left = await app.services.transactions.run(acme, (ctx) =>
      ctx.db.selectFrom('webhook_deliveries').select('message_id').where('endpoint_id', '=', endpoint.id).execute(),
    );
    expect(left.map((r) => r.message_id)).toEqual(['m-29']);
  });

  it('the admin shell shows the tenant’s delivery log, in words, and its "Send again" form sends the message once more', async () => {
    const endpoint = await createEndpoint(acmeHost, acmeAdmin, {
      url: receiver.url('/shell'),
      events: ['task.task.deleted'],
    });
    await app
      .http(acmeHost)
      .post(`${ENDPOINTS}/${endpoint.id}/send-test-event`)
      .set('Cookie', acmeAdmin.cookie)
      .expect(200);
    const [logged] = (
      await vi.waitFor(
        async () => {
          const res = await deliveries(acmeHost, acmeAdmin, endpoint.id);
          expect(res.body.items).toHaveLength(1);
          return res;
        },
        { timeout: 15_000, interval: 100 },
      )
    ).body.items;
    const page = await app.http(acmeHost).get('/admin/webhook/deliveries?limit=100').set('Cookie', acmeAdmin.cookie);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`data-delivery="${logged.id}"`);
    expect(page.text).toContain('Delivered');
    expect(page.text).toContain('>Webhook deliveries</a>');
    expect(page.text).toContain(receiver.url('/shell'));
    const globexPage = await app
      .http(globexHost)
      .get('/admin/webhook/deliveries?limit=100')
      .set('Cookie', globexAdmin.cookie);
    expect(globexPage.status).toBe(200);
    expect(globexPage.text).not.toContain(logged.id);
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)![1]!;
    const again = await app
      .http(acmeHost)
      .post(`/admin/webhook/endpoints/${endpoint.id}/send-again`)
      .set('Cookie', acmeAdmin.cookie)
      .type('form')
      .send({ csrf, deliveryId: logged.id });
    expect(again.status).toBe(303);
    await vi.waitFor(() => expect(receiver.at('/shell')).toHaveLength(2), { timeout: 15_000, interval: 100 });
  });

  it('an endpoint failing for 3 days is turned inactive and the tenant’s admins are notified; a success ends a streak', async () => {
    const endpoint = await createEndpoint(acmeHost, acmeAdmin, {
      url: receiver.url('/down'),
      events: ['task.task.deleted'],
    });
    receiver.answer('/down', 503);
    const adminId = await app.services.transactions.run(acme, async (ctx) => {
      const row = await ctx.db
        .insertInto('users')
        .values({
          email: `admin-${endpoint.id.slice(0, 8)}@example.test`,
          display_name: 'Admin',
          status: 'active',
          roles: ['admin'],
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      // The streak began 3 days and a minute ago.
      await ctx.db
        .updateTable('webhook_endpoints')
        .set({ failing_since: new Date(Date.now() - 3 * 86400_000 - 60_000) })
        .where('id', '=', endpoint.id)
        .execute();
      return row.id;
    });
    await app
      .http(acmeHost)
      .post(`${ENDPOINTS}/${endpoint.id}/send-test-event`)
      .set('Cookie', acmeAdmin.cookie)
      .expect(200);
    await vi.waitFor(
      async () => {
        const read = await app.http(acmeHost).get(`${ENDPOINTS}/${endpoint.id}`).set('Cookie', acmeAdmin.cookie);
        expect(read.body.active).toBe(false);
      },
      { timeout: 15_000, interval: 100 },
    );
    const notices = await app.services.transactions.run(acme, (ctx) =>
      ctx.db
        .selectFrom('notifications')
        .select(['recipient_id', 'title', 'link'])
        .where('link', '=', `/admin/webhook/endpoints/${endpoint.id}`)
        .execute(),
    );
    expect(notices).toEqual([
      {
        recipient_id: adminId,
        title: 'A webhook endpoint was turned off',
        link: `/admin/webhook/endpoints/${endpoint.id}`,
      },
    ]);

    // A streak younger than 3 days changes nothing; the next success ends it.
    const young = await createEndpoint(acmeHost, acmeAdmin, {
      url: receiver.url('/flapping'),
      events: ['task.task.deleted'],
    });
    receiver.answer('/flapping', 500);
    await app.services.transactions.run(acme, (ctx) =>
      ctx.db
        .updateTable('webhook_endpoints')
        .set({ failing_since: new Date(Date.now() - 2 * 86400_000) })
        .where('id', '=', young.id)
        .execute(),
    );
    await app
      .http(acmeHost)
      .post(`${ENDPOINTS}/${young.id}/send-test-event`)
      .set('Cookie', acmeAdmin.cookie)
      .expect(200);
    await vi.waitFor(
      async () => {
        const rows = (await deliveries(acmeHost, acmeAdmin, young.id)).body.items;
        expect(rows.map((d: { status: string }) => d.status)).toEqual(['succeeded', 'failed']);
      },
      { timeout: 15_000, interval: 100 },
    );
    const after = await app.services.transactions.run(acme, (ctx) =>
      ctx.db
        .selectFrom('webhook_endpoints')
        .select(['active', 'failing_since'])
        .where('id', '=', young.id)
        .executeTakeFirstOrThrow(),
    );
    expect(after).toEqual({ active: true, failing_since: null });
  });

  it('refuses an unpublished event name, a URL with credentials and a non-http scheme with 422', async () => {
    const bad = [
      { url: receiver.url('/x'), events: ['task.task.nonsense'] },
      { url: 'https://user:pw@hooks.example.com/x', events: ['*'] },
      { url: 'ftp://hooks.example.com/x', events: ['*'] },
    ];
    for (const body of bad) {
      const res = await app.http(acmeHost).post(ENDPOINTS).set('Cookie', acmeAdmin.cookie).send(body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.code).toBe('VALIDATION_FAILED');
    }
  });
});
