import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../../helpers/app.ts';
import { testConfig } from '../../helpers/config.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { compose } from '../../../framework/composition.ts';
import { defineModule } from '../../../framework/entity/define.ts';
import { allModules } from '../../../modules/index.ts';
import { webhookFanOut } from '../../../modules/webhook/fan-out.ts';
import { subscriptionQueue } from '../../../framework/events/relay.ts';
import { checkCrossTenantReads } from '../../../framework/events/concerned-tenants.ts';
import { startReceiver } from './receiver.ts';

let app: TestApp;
let withEndpoint: TenantRef;
let without: TenantRef;
let admin: SignedIn;
let bystander: SignedIn;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const withHost = 'fanout-with.localhost';
const withoutHost = 'fanout-without.localhost';
const FAN_OUT_QUEUE = subscriptionQueue(webhookFanOut.name);

beforeAll(async () => {
  receiver = await startReceiver();
  app = await startTestApp({
    role: 'all',
    startWorker: true,
    config: testConfig({ webhooks: { allow_http: true, allow_private_networks: true, retry_base_ms: 1000 } }),
  });
  withEndpoint = await createCustomer(app, 'fanout-with');
  without = await createCustomer(app, 'fanout-without');
  admin = await signInAs(app, withEndpoint, ['webhook:manage', 'task:read', 'task:update']);
  bystander = await signInAs(app, without, ['webhook:manage', 'task:read', 'task:update']);
});
afterAll(async () => {
  await app?.close();
  await receiver?.close();
});

const createTask = async (host: string, who: SignedIn) => {
  const res = await app
    .http(host)
    .post('/api/v1/task/tasks')
    .set('Cookie', who.cookie)
    .send({ title: 'Ship it', priority: 'high', deadline: new Date(Date.now() + 86400_000).toISOString() });
  expect(res.status).toBe(201);
  return res.body.id as string;
};
/** The fan-out jobs queued for a tenant's events (pg-boss keeps completed jobs in the same table). */
const fanOutJobs = async (tenant: TenantRef) =>
  Number(
    (
      await app.services.db.pool.query<{ n: string }>(
        `select count(*) as n from pgboss.job where name = $1 and data->>'tenantId' = $2`,
        [FAN_OUT_QUEUE, tenant.id],
      )
    ).rows[0]!.n,
  );
/** Waits until the outbox rows of the task's events are relayed (their audit rows are written in the same transaction). */
const relayed = (taskId: string) =>
  vi.waitFor(
    async () => {
      const { rows } = await app.services.db.pool.query(
        `select 1 from outbox where payload->>'id' = $1 and relayed_at is null`,
        [taskId],
      );
      const { rows: any } = await app.services.db.pool.query(`select 1 from outbox where payload->>'id' = $1`, [
        taskId,
      ]);
      if (any.length === 0 || rows.length > 0) throw new Error('not relayed yet');
    },
    { timeout: 15_000, interval: 100 },
  );

describe('webhook fan-out concerns only tenants with an endpoint (onlyTenantsWith)', () => {
  it('a create in a tenant without endpoints queues no fan-out job; a tenant with one still receives the delivery', async () => {
    const endpoint = await app
      .http(withHost)
      .post('/api/v1/webhook/endpoints')
      .set('Cookie', admin.cookie)
      .send({ url: receiver.url('/fan-out'), events: ['*'] });
    expect(endpoint.status).toBe(201);

    const lonelyTask = await createTask(withoutHost, bystander);
    const deliveredTask = await createTask(withHost, admin);
    await relayed(lonelyTask);
    await relayed(deliveredTask);
    await vi.waitFor(
      () => {
        if (!receiver.at('/fan-out').some((r) => JSON.parse(r.body).data.id === deliveredTask))
          throw new Error('not delivered yet');
      },
      { timeout: 15_000, interval: 100 },
    );

    expect(await fanOutJobs(without)).toBe(0);
    expect(await fanOutJobs(withEndpoint)).toBeGreaterThan(0);
  });

  it("the module's own requests still arrive: a test event of an endpoint is delivered", async () => {
    const endpoint = await app
      .http(withHost)
      .post('/api/v1/webhook/endpoints')
      .set('Cookie', admin.cookie)
      .send({ url: receiver.url('/own-request'), events: ['task.task.created'] });
    expect(endpoint.status).toBe(201);
    await app
      .http(withHost)
      .post(`/api/v1/webhook/endpoints/${endpoint.body.id}/send-test-event`)
      .set('Cookie', admin.cookie)
      .expect(200);
    await vi.waitFor(
      () => {
        if (!receiver.at('/own-request').some((r) => JSON.parse(r.body).type === 'webhook.test'))
          throw new Error('not delivered yet');
      },
      { timeout: 15_000, interval: 100 },
    );
  });

  it('a tenant whose only endpoint is deleted gets no fan-out job for its next event', async () => {
    const endpoint = await app
      .http(withoutHost)
      .post('/api/v1/webhook/endpoints')
      .set('Cookie', bystander.cookie)
      .send({ url: receiver.url('/deleted'), events: ['*'] });
    expect(endpoint.status).toBe(201);
    await app
      .http(withoutHost)
      .delete(`/api/v1/webhook/endpoints/${endpoint.body.id}`)
      .set('Cookie', bystander.cookie)
      .expect(204);
    // The endpoint's own created and deleted events: counted from once they are relayed.
    await relayed(endpoint.body.id);
    const before = await fanOutJobs(without);
    const task = await createTask(withoutHost, bystander);
    await relayed(task);
    expect(await fanOutJobs(without)).toBe(before);
  });

  it('a relay does not start when its cross-tenant read cannot see a filtered table (no allow_cross_tenant_read)', async () => {
    await expect(
      checkCrossTenantReads(app.services.db.pool, [
        { queue: FAN_OUT_QUEUE, table: 'webhook_endpoints', softDelete: true },
      ]),
    ).resolves.toBeUndefined();
    await expect(
      checkCrossTenantReads(app.services.db.pool, [
        { queue: FAN_OUT_QUEUE, table: 'webhook_deliveries', softDelete: false },
      ]),
    ).rejects.toThrow(
      /tenantry_cross_tenant cannot read webhook_deliveries; the module's migration must call allow_cross_tenant_read on it/,
    );
  });

  it('refuses at boot an onlyTenantsWith table that is not a tenant entity table of the declaring module', () => {
    const others = allModules.filter((m) => m.name !== 'webhook');
    const borrowing = defineModule({
      name: 'borrower',
      subscriptions: [{ ...webhookFanOut, name: 'borrower-fan-out' }],
    });
    expect(() => compose([...others, borrowing], testConfig())).toThrow(
      /subscription borrower-fan-out \(module borrower\): onlyTenantsWith names webhook_endpoints, which is not a tenant-owned entity table of module borrower/,
    );
    const global = defineModule({
      name: 'borrower',
      subscriptions: [
        { name: 'on-tenants', event: '*', onlyTenantsWith: { table: 'tenants' }, handle: async () => {} },
      ],
    });
    expect(() => compose([...others, global], testConfig())).toThrow(/onlyTenantsWith names tenants/);
  });
});
