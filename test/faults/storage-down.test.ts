import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import { startS3Server, type S3Server } from '../helpers/s3.ts';
import { eventually } from '../modules/user/support.ts';
import { FILES, form } from '../modules/file/helpers.ts';
import { subscriptionQueue } from '../../framework/events/relay.ts';
import { allModules } from '../../modules/index.ts';
import { fileModule } from '../../modules/file/index.ts';
import { blobRemoval } from '../../modules/file/blob-removal.ts';

/**
 * Fault: object storage down (issue 31, point 4). The test stops its S3-compatible server (s3rver
 * in a process of its own, killed with SIGKILL) and starts it again on the same port and directory.
 * While it is down an upload and a download answer 503 STORAGE_UNAVAILABLE with Retry-After, the
 * failed upload writes no row, and the file.deleted of a delete made meanwhile fails and is
 * retried by pg-boss (retries shortened for the test: the first after 1 s) until the server is back
 * and the object goes. Once it returns, uploads and downloads succeed without a restart.
 */

const HOST = 'storagedown.localhost';
const PREFIX = 'tenantry/';
const removalQueue = subscriptionQueue(blobRemoval.name);
let server: S3Server;
let app: TestApp;
let caller: SignedIn;

beforeAll(async () => {
  server = await startS3Server();
  const quickRetries = { ...fileModule, subscriptions: [{ ...blobRemoval, retryLimit: 20, retryDelay: 1 }] };
  const modules = allModules.map((m) => (m === fileModule ? quickRetries : m));
  app = await startTestApp({
    modules,
    role: 'all',
    startWorker: true,
    config: testConfig({ files: { storage: 's3', s3: server.settings(PREFIX) } }),
  });
  const tenant = await createCustomer(app, 'storagedown', HOST);
  caller = await signInAs(app, tenant, ['file:read', 'file:manage']);
}, 60_000);
afterAll(async () => {
  await app?.close();
  await server?.close();
});

const upload = (content: string) => {
  const { body, type } = form([{ name: 'file', filename: 'notes.txt', type: 'text/plain', content }]);
  return app
    .http(HOST)
    .post(`${FILES}?visibility=private`)
    .set('Cookie', caller.cookie)
    .set('Content-Type', type)
    .send(body);
};
const download = (id: string) => app.http(HOST).get(`${FILES}/${id}/content`).set('Cookie', caller.cookie);
const storageKeys = async () =>
  (await app.services.db.pool.query<{ key: string }>('select storage_key::text as key from files order by 1')).rows.map(
    (r) => `${PREFIX}${r.key}`,
  );
const removals = async () =>
  (
    await app.services.db.pool.query<{ state: string; retry_count: number }>(
      'select state, retry_count from pgboss.job where name = $1',
      [removalQueue],
    )
  ).rows;

function expectUnavailable(res: { status: number; headers: Record<string, string>; body: { code?: string } }): void {
  expect(res.status, JSON.stringify(res.body)).toBe(503);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body.code).toBe('STORAGE_UNAVAILABLE');
  expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
}

describe('object storage down during an upload, a download and a removal', () => {
  it('answers 503 STORAGE_UNAVAILABLE without a row, retries file.deleted until it succeeds, and recovers when the server returns', async () => {
    const kept = await upload('stored before the outage');
    const doomed = await upload('deleted during the outage');
    expect([kept.status, doomed.status]).toEqual([201, 201]);
    const keysBefore = await storageKeys();
    expect(await server.keys()).toEqual(keysBefore);

    await server.stop();

    const failed = await upload('sent during the outage');
    expectUnavailable(failed);
    expect(await storageKeys()).toEqual(keysBefore);
    expectUnavailable(await download(kept.body.id));

    // The row goes at once; its object cannot: the removal fails and is retried.
    expect((await app.http(HOST).delete(`${FILES}/${doomed.body.id}`).set('Cookie', caller.cookie)).status).toBe(204);
    await eventually(
      async () => (await removals()).some((job) => job.retry_count >= 2),
      30_000,
      'file.deleted retried twice',
    );
    expect((await removals()).some((job) => job.state === 'completed')).toBe(false);

    await server.start();

    // Back on the same port: the retried removal succeeds, and uploads and downloads work again.
    await eventually(
      async () => (await removals()).every((job) => job.state === 'completed'),
      30_000,
      'the removal to succeed',
    );
    const again = await upload('sent after the outage');
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    const back = await download(kept.body.id);
    expect([back.status, back.text]).toEqual([200, 'stored before the outage']);
    // The bucket holds exactly the rows' objects: the failed upload left none, the deleted file's went.
    expect(await server.keys()).toEqual(await storageKeys());
    expect((await storageKeys()).length).toBe(2);
  }, 60_000);
});
