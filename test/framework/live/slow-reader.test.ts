import { afterAll, beforeAll, expect, it } from 'vitest';
import { request, type IncomingMessage } from 'node:http';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import { testConfig } from '../../helpers/config.ts';
import { freePort } from '../../helpers/ports.ts';
import { scrape, sampleValue } from '../../helpers/metrics.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';

/**
 * Issue 45: a client that does not read its stream is dropped once what waits for it passes
 * live.max_buffer_bytes; it holds neither memory nor a connection after that, and the process's
 * count of open streams gives its place back; tenantry_live_streams_dropped_slow_total counts it.
 */
const HOST = 'slow.localhost';
let app: TestApp;
let tenant: TenantRef;
let base: string;

beforeAll(async () => {
  app = await startTestApp({
    role: 'all',
    startWorker: true,
    config: testConfig({ live: { max_buffer_bytes: 1024 }, metrics: { port: await freePort() } }),
  });
  tenant = await createCustomer(app, 'slow', HOST);
  base = await app.web!.listen({ port: 0, host: '127.0.0.1' });
}, 60_000);

afterAll(async () => {
  await app?.close();
});

/** Opens the stream and never reads it: the answer stays paused, so the server's writes pile up. */
function openUnread(cookie: string): Promise<{ res: IncomingMessage; closed: Promise<void> }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      { hostname, port, path: '/api/v1/task/tasks/stream', agent: false, headers: { host: HOST, cookie } },
      (res) => {
        const closed = new Promise<void>((done) => res.socket.once('close', () => done()));
        resolve({ res, closed });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

it('drops a stream whose client does not read once past live.max_buffer_bytes, and frees its place', async () => {
  const member = await signInAs(app, tenant, ['task:read', 'task:update']);
  const { res, closed } = await openUnread(member.cookie);
  expect(res.statusCode).toBe(200);
  await expect.poll(() => app.services.live.openStreams).toBe(1);
  let dropped = false;
  void closed.then(() => {
    dropped = true;
  });
  // Rows of some 20 kB each, until the kernel's buffers are full and the stream's own passes the bound.
  const description = 'x'.repeat(19_000);
  for (let i = 0; i < 400 && !dropped; i++) {
    const made = await app
      .http(HOST)
      .post('/api/v1/task/tasks')
      .set('Cookie', member.cookie)
      .send({ title: `Bulky ${i}`, description, priority: 'low', deadline: '2031-01-01T00:00:00Z' });
    expect(made.status).toBe(201);
  }
  await Promise.race([closed, new Promise((r) => setTimeout(r, 5000))]);
  expect(dropped).toBe(true);
  await expect.poll(() => app.services.live.openStreams).toBe(0);
  const samples = (await scrape(app.metricsUrl!)).samples;
  expect(sampleValue(samples, 'tenantry_live_streams_dropped_slow_total')).toBe(1);
  expect(sampleValue(samples, 'tenantry_live_streams')).toBe(0);
}, 120_000);
