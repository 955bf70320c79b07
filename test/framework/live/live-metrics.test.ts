import { afterAll, beforeAll, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import { testConfig } from '../../helpers/config.ts';
import { freePort } from '../../helpers/ports.ts';
import { scrape, sampleValue } from '../../helpers/metrics.ts';
import { StreamClient } from '../../helpers/event-stream.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';

/**
 * Issue 45, point 8: the live streams' series on GET /metrics (docs/observability.md) move with
 * what the streams do: open streams, events delivered by event, the commit→delivery latency
 * histogram, and batches. (Streams dropped as slow: test/framework/live/slow-reader.test.ts.)
 */
const HOST = 'live-metrics.localhost';
const TASKS = '/api/v1/task/tasks';
let app: TestApp;
let tenant: TenantRef;
let base: string;

beforeAll(async () => {
  app = await startTestApp({
    role: 'all',
    startWorker: true,
    config: testConfig({ metrics: { port: await freePort() } }),
  });
  tenant = await createCustomer(app, 'live-metrics', HOST);
  base = await app.web!.listen({ port: 0, host: '127.0.0.1' });
}, 60_000);

afterAll(async () => {
  await app?.close();
});

const series = async () => (await scrape(app.metricsUrl!)).samples;

it('counts open streams, events delivered by event, their commit→delivery latency and the batches', async () => {
  const member = await signInAs(app, tenant, ['task:read', 'task:update']);
  const before = await series();
  expect(sampleValue(before, 'tenantry_live_streams')).toBe(0);
  const delivered = (samples: typeof before, event: string) =>
    sampleValue(samples, 'tenantry_live_events_delivered_total', { event }) ?? 0;
  const latencyCount = (samples: typeof before) =>
    sampleValue(samples, 'tenantry_live_delivery_latency_seconds_count')!;

  const client = await StreamClient.open(base, `${TASKS}/stream?status=not.in.(resolved,closed)`, {
    host: HOST,
    cookie: member.cookie,
  });
  expect(client.status).toBe(200);
  await expect.poll(async () => sampleValue(await series(), 'tenantry_live_streams')).toBe(1);

  const made = await app
    .http(HOST)
    .post(TASKS)
    .set('Cookie', member.cookie)
    .send({ title: 'Counted', priority: 'high', deadline: '2031-01-01T00:00:00Z' });
  expect(made.status).toBe(201);
  await client.take(1);
  const resolved = await app
    .http(HOST)
    .post(`${TASKS}/${made.body.id}/resolve`)
    .set('Cookie', member.cookie)
    .send({ resolution: 'done' });
  expect(resolved.status).toBe(200);
  expect((await client.take(1))[0]!.event).toBe('removed');

  const after = await series();
  expect(delivered(after, 'created') - delivered(before, 'created')).toBe(1);
  expect(delivered(after, 'removed') - delivered(before, 'removed')).toBe(1);
  expect(latencyCount(after) - latencyCount(before)).toBe(2);
  // Each delivery took some time from its commit, and far less than the histogram's top bucket.
  const sum = sampleValue(after, 'tenantry_live_delivery_latency_seconds_sum')!;
  expect(sum - sampleValue(before, 'tenantry_live_delivery_latency_seconds_sum')!).toBeGreaterThan(0);
  expect(sampleValue(after, 'tenantry_live_delivery_latency_seconds_bucket', { le: '+Inf' })).toBe(latencyCount(after));
  expect(sampleValue(after, 'tenantry_live_batches_total')!).toBeGreaterThan(
    sampleValue(before, 'tenantry_live_batches_total')!,
  );

  client.close();
  await expect.poll(async () => sampleValue(await series(), 'tenantry_live_streams')).toBe(0);
});
