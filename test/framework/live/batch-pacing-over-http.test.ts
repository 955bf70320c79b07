import { afterAll, beforeAll, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import { testConfig } from '../../helpers/config.ts';
import { freePort } from '../../helpers/ports.ts';
import { scrape, sampleValue } from '../../helpers/metrics.ts';
import { StreamClient } from '../../helpers/event-stream.ts';
import { LIVE_CHANNEL } from '../../../framework/live/positions.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';

/**
 * Issue 45, point 9 (the list beside 1,000 streams): a tenant whose changes come faster than one
 * batch per live.batch_interval_ms gets one batch per tick of the hub, not one per notification.
 * The relay does not run here (no worker): the only notifications are the test's own, sent as the
 * relay sends them, so the batches counted are theirs.
 */
const HOST = 'live-pacing.localhost';
const INTERVAL_MS = 1000;
const NOTIFICATIONS = 8;
let app: TestApp;
let tenant: TenantRef;
let base: string;

beforeAll(async () => {
  app = await startTestApp({
    role: 'all',
    config: testConfig({ live: { batch_interval_ms: INTERVAL_MS }, metrics: { port: await freePort() } }),
  });
  tenant = await createCustomer(app, 'live-pacing', HOST);
  base = await app.web!.listen({ port: 0, host: '127.0.0.1' });
}, 60_000);

afterAll(async () => {
  await app?.close();
});

const batches = async () => sampleValue((await scrape(app.metricsUrl!)).samples, 'tenantry_live_batches_total') ?? 0;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

it('gathers the notifications a busy tenant receives within the interval into one batch per tick', async () => {
  const member = await signInAs(app, tenant, ['task:read']);
  const client = await StreamClient.open(base, '/api/v1/task/tasks/stream', { host: HOST, cookie: member.cookie });
  expect(client.status).toBe(200);
  // The stream's first batch (what it missed since its start position) has run.
  await expect.poll(batches, { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
  const before = await batches();
  // Notifications 50 ms apart, each longer than a batch takes here: without pacing, a batch each.
  const started = performance.now();
  for (let i = 0; i < NOTIFICATIONS; i++) {
    await app.services.db.pool.query('select pg_notify($1, $2)', [LIVE_CHANNEL, tenant.id]);
    await sleep(50);
  }
  const span = performance.now() - started;
  await expect.poll(batches, { timeout: 10_000 }).toBeGreaterThan(before);
  // Two ticks later every held notification has had its batch.
  await sleep(2 * INTERVAL_MS + 200);
  const ran = (await batches()) - before;
  // At most one batch at once (when the last began an interval ago or more), then one per tick
  // that found them held: the ticks their span crossed, and the one after (two, for the span of
  // under one interval they take here; more only if this machine stretched the span).
  expect(ran).toBeLessThanOrEqual(2 + Math.ceil(span / INTERVAL_MS));
  expect(NOTIFICATIONS).toBeGreaterThan(2 + Math.ceil(span / INTERVAL_MS));
  client.close();
});
