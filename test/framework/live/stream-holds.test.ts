import { afterAll, beforeAll, expect, it } from 'vitest';
import { queryObjects } from 'node:v8';
import { Transaction } from 'kysely';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import { testConfig } from '../../helpers/config.ts';
import { StreamClient } from '../../helpers/event-stream.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';

/**
 * Issue 45, memory: an open stream holds its connection and what its batches need, not the
 * transaction it was opened in (its context, session, hooks and the request's parsed query). At
 * 2,000 open streams that transaction was some 3 KiB each of heap kept live for as long as the
 * connection stayed open (docs/performance.md, "Live streams").
 */
const HOST = 'holds.localhost';
const STREAMS = 10;
let app: TestApp;
let tenant: TenantRef;
let base: string;
const open: StreamClient[] = [];

beforeAll(async () => {
  app = await startTestApp({
    role: 'all',
    config: testConfig({ live: { max_streams_per_caller: STREAMS } }),
  });
  tenant = await createCustomer(app, 'holds', HOST);
  base = await app.web!.listen({ port: 0, host: '127.0.0.1' });
}, 60_000);

afterAll(async () => {
  for (const client of open) client.close();
  await app?.close();
});

/** Transactions still reachable after a full collection (queryObjects collects first). */
const transactions = () => queryObjects(Transaction, { format: 'count' });

it('keeps no transaction alive for an open stream once it has joined', async () => {
  const member = await signInAs(app, tenant, ['task:read']);
  const before = transactions();
  for (let i = 0; i < STREAMS; i++) {
    const client = await StreamClient.open(base, '/api/v1/task/tasks/stream', { host: HOST, cookie: member.cookie });
    open.push(client);
    expect(client.status).toBe(200);
  }
  await expect.poll(() => app.services.live.openStreams).toBe(STREAMS);
  // Batches may hold a transaction for a moment; the streams' own ten would stay.
  await expect.poll(transactions, { timeout: 10_000 }).toBeLessThanOrEqual(before);
  expect(app.services.live.openStreams).toBe(STREAMS);
});
