import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import pg from 'pg';
import supertest from 'supertest';
import { npmRun, startService, stopService } from './processes.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { startS3Server, type S3Server } from '../helpers/s3.ts';
import { startTestApp, createCustomer, signInAs } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import { form } from '../modules/file/helpers.ts';
import { allModules } from '../../modules/index.ts';

/**
 * The acceptance of files in a bucket, as an operator meets it: `npm start` with
 * TENANTRY_FILES_STORAGE=s3 and a local S3-compatible server serves uploads, ranges and deletes, and
 * `npm run job -- file-reconcile` leaves the bucket equal to the rows.
 */

const HOST = 's3svc.localhost';
const PREFIX = 'tenantry/';
let databaseUrl: string;
let bucket: S3Server;
let settings: Record<string, string>;
let service: { child: ChildProcess; url: string };
let cookie: string;
let db: pg.Client;

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  bucket = await startS3Server();
  const setup = await startTestApp({
    databaseUrl,
    modules: allModules,
    config: testConfig({ files: { storage: 's3', s3: bucket.settings(PREFIX) } }),
  });
  const tenant = await createCustomer(setup, 's3svc', HOST);
  cookie = (await signInAs(setup, tenant, ['file:read', 'file:manage'])).cookie;
  await setup.close();
  settings = {
    TENANTRY_DATABASE_URL: databaseUrl,
    TENANTRY_SERVER_PORT: '0',
    TENANTRY_SERVER_PUBLIC_HOST: 'operator.localhost',
    ...bucket.env(PREFIX),
  };
  service = await startService(settings);
  db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
}, 90_000);
afterAll(async () => {
  if (service) await stopService(service.child);
  await db?.end();
  await bucket?.close();
});

const http = () => supertest(service.url);
const upload = (content: string) => {
  const { body, type } = form([{ name: 'file', filename: 'notes.txt', type: 'text/plain', content }]);
  return http()
    .post('/api/v1/file/files?visibility=private')
    .set('Host', HOST)
    .set('Cookie', cookie)
    .set('Content-Type', type)
    .send(body);
};
const objectsOfRows = async () =>
  (await db.query<{ key: string }>('select storage_key::text as key from files order by 1')).rows.map(
    (r) => `${PREFIX}${r.key}`,
  );

describe('npm start with TENANTRY_FILES_STORAGE=s3', () => {
  it('serves uploads, ranges and deletes, and npm run job -- file-reconcile leaves the bucket equal to the rows', async () => {
    const kept = await upload('abcdefghijklmnopqrstuvwxyz');
    expect(kept.status, JSON.stringify(kept.body)).toBe(201);
    const gone = await upload('to be deleted');
    expect(gone.status).toBe(201);
    expect(await bucket.keys()).toEqual(await objectsOfRows());

    const range = await http()
      .get(`/api/v1/file/files/${kept.body.id}/content`)
      .set('Host', HOST)
      .set('Cookie', cookie)
      .set('Range', 'bytes=2-5');
    expect([range.status, range.headers['content-range'], range.text]).toEqual([206, 'bytes 2-5/26', 'cdef']);

    expect(
      (await http().delete(`/api/v1/file/files/${gone.body.id}`).set('Host', HOST).set('Cookie', cookie)).status,
    ).toBe(204);
    // The worker of `npm start` (role all) removes the object after the commit.
    const deadline = Date.now() + 10_000;
    while ((await bucket.keys()).length !== 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(await bucket.keys()).toEqual(await objectsOfRows());

    // An orphan: an object under the prefix that no row names (a crash between the bytes and the row).
    await bucket.client.send(
      new PutObjectCommand({ Bucket: bucket.bucket, Key: `${PREFIX}${randomUUID()}`, Body: 'orphan' }),
    );
    expect((await bucket.keys()).length).toBe(2);
    // As if two hours had passed: the orphan is past the hour reconcile leaves alone.
    const at = new Date(Date.now() + 2 * 60 * 60 * 1000).toISOString();
    const run = await npmRun('job', ['file-reconcile', '--at', at], settings);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/"removed":1/);
    expect(await bucket.keys()).toEqual(await objectsOfRows());
    const download = await http()
      .get(`/api/v1/file/files/${kept.body.id}/content`)
      .set('Host', HOST)
      .set('Cookie', cookie);
    expect(download.text).toBe('abcdefghijklmnopqrstuvwxyz');
  }, 60_000);
});
