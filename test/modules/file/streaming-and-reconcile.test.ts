import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { request as httpRequest, type ClientRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import pg from 'pg';
import { startTestApp, createCustomer, signInAs, type TestApp } from '../../helpers/app.ts';
import { testConfig } from '../../helpers/config.ts';
import { SettableClock } from '../../../framework/clock.ts';
import { JobRunner } from '../../../framework/events/jobs.ts';
import { blobStoreFor } from '../../../framework/storage/index.ts';
import { FILES, form, PNG, sha256 } from './helpers.ts';
import { fileDriver, watchPuts, type FileDriver } from './driver.ts';

const HOST = 'reconcile.localhost';
const HOUR = 60 * 60 * 1000;
const clock = new SettableClock();

let driver: FileDriver;
let app: TestApp;
let cookie: string;
let port: number;
let owner: pg.Client;

beforeAll(async () => {
  // The local disk, or an S3 bucket (test/modules/file/driver.ts).
  driver = await fileDriver();
  app = await startTestApp({ config: testConfig({ files: { ...driver.files, max_bytes: 1024 * 1024 } }), clock });
  const tenant = await createCustomer(app, 'reconcile', HOST);
  cookie = (await signInAs(app, tenant, ['file:read', 'file:manage'])).cookie;
  await app.web!.listen({ host: '127.0.0.1', port: 0 });
  port = (app.web!.server.address() as AddressInfo).port;
  owner = new pg.Client({ connectionString: app.databaseUrl });
  await owner.connect();
});
afterAll(async () => {
  await owner?.end();
  await app?.close();
  await driver?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i += 1) {
    if (check()) return;
    await sleep(25);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * Starts an upload whose body is sent by hand: the head of the form now (up to `split`, by default
 * half of it), the rest when asked. `form` may change the form first (cut it short, say).
 */
function slowUpload(
  content: Buffer,
  options: { type?: string; split?: (body: Buffer) => number; form?: (body: Buffer) => Buffer } = {},
): { req: ClientRequest; rest: Buffer; answer: Promise<{ status: number; body: string }> } {
  const made = form([
    { name: 'file', filename: 'slow.bin', type: options.type ?? 'application/octet-stream', content },
  ]);
  const type = made.type;
  const body = options.form?.(made.body) ?? made.body;
  const req = httpRequest({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path: `${FILES}?visibility=private`,
    headers: { host: HOST, cookie, 'content-type': type, 'content-length': body.length },
  });
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on('error', reject);
  });
  const head = options.split?.(body) ?? Math.floor(body.length / 2);
  req.write(body.subarray(0, head));
  return { req, rest: body.subarray(head), answer };
}

/** Transactions open on the app's database, other than this query's own. */
async function openTransactions(): Promise<number> {
  const { rows } = await owner.query<{ n: number }>(
    `select count(*)::int as n from pg_stat_activity
      where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend' and xact_start is not null`,
  );
  return rows[0]!.n;
}

const reconcile = async () => (await new JobRunner(app.services).runOnce('file-reconcile'))[0]!;

describe('Files rule 2: the bytes flow with no transaction open', () => {
  it('holds no database transaction while an upload is half sent, and stores it once the rest arrives', async () => {
    const puts = watchPuts(app.config);
    try {
      const upload = slowUpload(Buffer.alloc(200_000, 9));
      await until(() => puts.started() === 1, 'the upload to reach storage');
      await sleep(100);
      expect(await openTransactions()).toBe(0);
      upload.req.end(upload.rest);
      const answer = await upload.answer;
      expect(answer.status).toBe(201);
      expect(JSON.parse(answer.body).size).toBe(200_000);
    } finally {
      puts.restore();
    }
  });
});

describe('Files: an upload cut short after its file part keeps nothing', () => {
  // The whole file part, up to and with the delimiter that ends it; not what follows the delimiter.
  const closing = Buffer.byteLength('--\r\n');
  const throughDelimiter = (body: Buffer) => body.subarray(0, body.length - closing);

  async function nothingKept(run: (settled: () => Promise<void>) => Promise<void>): Promise<void> {
    const before = await driver.stored();
    const { rows: rowsBefore } = await owner.query('select count(*)::int as n from files');
    const puts = watchPuts(app.config);
    try {
      const settled = () => until(() => puts.settled() === 1, 'the file part to be stored');
      await run(settled);
      await settled();
      // The refusal removes the blob before it answers; the client gone gets no answer to wait for.
      await sleep(200);
    } finally {
      puts.restore();
    }
    const { rows } = await owner.query('select count(*)::int as n from files');
    expect(rows).toEqual(rowsBefore);
    expect(await driver.stored()).toEqual(before);
  }

  it('the client gone once the file part has been stored, before the form ends: no row, no blob', async () => {
    await nothingKept(async (settled) => {
      const upload = slowUpload(Buffer.alloc(200_000, 3), { form: throughDelimiter, split: (body) => body.length });
      upload.answer.catch(() => undefined);
      await settled();
      upload.req.destroy();
    });
  });

  it('a form that ends after the file part without its closing delimiter: 400 MALFORMED_REQUEST, no row, no blob', async () => {
    await nothingKept(async (settled) => {
      // The delimiter and the CR of a line break, whose LF never comes: the request ends there.
      const cut = (body: Buffer) => Buffer.concat([throughDelimiter(body), Buffer.from('\r')]);
      const upload = slowUpload(Buffer.alloc(200_000, 4), { form: cut, split: (body) => body.length - 1 });
      await settled();
      upload.req.end(upload.rest);
      const answer = await upload.answer;
      expect(answer.status, answer.body).toBe(400);
      expect(JSON.parse(answer.body).code).toBe('MALFORMED_REQUEST');
    });
  });
});

describe('Files rule 7: a long upload frees each chunk once stored', () => {
  it('keeps the head it sniffs when the first bytes of the file arrive as a chunk of their own, which the store then frees', async () => {
    // The part's headers go first, alone; the file's bytes follow in a later read, so the first
    // chunk of the file is a whole body chunk, handed to the store and freed once written.
    const png = Buffer.concat([PNG, Buffer.alloc(64 * 1024, 5)]);
    const upload = slowUpload(png, { type: 'image/png', split: (body) => body.indexOf('\r\n\r\n') + 4 });
    await sleep(200);
    upload.req.end(upload.rest);
    const answer = await upload.answer;
    expect(answer.status, answer.body).toBe(201);
    expect(JSON.parse(answer.body)).toMatchObject({ mediaType: 'image/png', size: png.length, sha256: sha256(png) });
  });
});

describe('file-reconcile: cron 45 3 * * *, not per tenant, removes blobs no row names that are older than an hour', () => {
  it('is registered as declared, since the store (local disk or bucket) can list', () => {
    const job = app.services.jobs.find((j) => j.name === 'file-reconcile');
    expect(job).toMatchObject({ cron: '45 3 * * *', perTenant: false });
    expect(blobStoreFor(app.config).capabilities).toEqual({ seekable: true, listable: true });
  });

  it('an aborted upload (the client disconnects mid-body) leaves nothing after reconcile', async () => {
    const before = await driver.stored();
    const { rows: rowsBefore } = await owner.query('select count(*)::int as n from files');
    const puts = watchPuts(app.config);
    const upload = slowUpload(Buffer.alloc(200_000, 7));
    upload.answer.catch(() => undefined);
    clock.set(new Date(Date.now() + 2 * HOUR));
    try {
      await until(() => puts.started() === 1, 'the upload to reach storage');
      upload.req.destroy();
      await until(() => puts.settled() === 1, 'the aborted upload to be cleaned');
      const outcome = await reconcile();
      expect(outcome.ok).toBe(true);
    } finally {
      clock.reset();
      puts.restore();
    }
    expect(await driver.stored()).toEqual(before);
    const { rows } = await owner.query('select count(*)::int as n from files');
    expect(rows).toEqual(rowsBefore);
  });

  it('a crash between the bytes and the row leaves an orphan that reconcile removes; blobs a row names stay', async () => {
    const before = await driver.stored();
    const kept = await app
      .http(HOST)
      .post(`${FILES}?visibility=private`)
      .set('Cookie', cookie)
      .attach('file', Buffer.from('keep me'), { filename: 'keep.bin', contentType: 'application/octet-stream' });
    expect(kept.status).toBe(201);
    // The crash: bytes stored under a key, no row written; and a put cut off before it completed
    // (a file under incoming/, or a multipart upload never completed, which is no object).
    const orphan = randomUUID();
    await blobStoreFor(app.config).put(orphan, Readable.from([Buffer.from('orphan')]));
    await driver.plantIncomplete();
    clock.set(new Date(Date.now() + 2 * HOUR));
    try {
      const outcome = await reconcile();
      // The local disk removes what a put left under incoming/; a bucket's lifecycle rule removes incomplete multipart uploads.
      expect(outcome).toMatchObject({ ok: true, summary: { removed: 1, incomplete: driver.name === 'local' ? 1 : 0 } });
    } finally {
      clock.reset();
    }
    expect(await blobStoreFor(app.config).stat(orphan)).toBeNull();
    const keptKey = (
      await owner.query<{ storage_key: string }>('select storage_key from files where id = $1', [kept.body.id])
    ).rows[0]!.storage_key;
    // What is stored now is what was stored before, plus the kept file's blob.
    expect((await driver.stored()).filter((f) => !before.includes(f))).toEqual([expect.stringContaining(keptKey)]);
    const download = await app.http(HOST).get(`${FILES}/${kept.body.id}/content`).set('Cookie', cookie);
    expect(download.status).toBe(200);
  });

  it('keeps a blob younger than an hour even when no row names it', async () => {
    const young = randomUUID();
    await blobStoreFor(app.config).put(young, Readable.from([Buffer.from('young')]));
    clock.set(new Date(Date.now() + 50 * 60 * 1000));
    try {
      expect((await reconcile()).ok).toBe(true);
    } finally {
      clock.reset();
    }
    expect(await blobStoreFor(app.config).stat(young)).not.toBeNull();
    await blobStoreFor(app.config).remove(young);
  });

  it('asks in batches of 500 and removes every orphan past the first batch too', async () => {
    const keys = Array.from({ length: 501 }, () => randomUUID());
    for (let at = 0; at < keys.length; at += 50)
      await Promise.all(keys.slice(at, at + 50).map((key) => driver.plant(key, 'o')));
    clock.set(new Date(Date.now() + 2 * HOUR));
    try {
      const outcome = await reconcile();
      expect(outcome).toMatchObject({ ok: true, summary: { removed: 501 } });
      const { seen, batches } = outcome.summary as { seen: number; batches: number };
      expect(seen).toBeGreaterThan(500);
      expect(batches).toBe(Math.ceil(seen / 500));
    } finally {
      clock.reset();
    }
    const left = await driver.stored();
    expect(keys.filter((key) => left.some((f) => f.endsWith(key)))).toEqual([]);
  }, 60_000);
});

describe('Subscriptions file.deleted: blob removal', () => {
  const subscription = () => app.services.registry.subscriptions.find((s) => s.event === 'file.deleted')!;
  const event = (storageKey: string) => ({
    id: randomUUID(),
    name: 'file.deleted',
    tenantId: app.operator.id,
    actorId: null,
    occurredAt: new Date().toISOString(),
    payload: { id: randomUUID(), storageKey },
  });

  it('deletes the blob named by the key; a missing blob is not an error', async () => {
    const key = randomUUID();
    await blobStoreFor(app.config).put(key, Readable.from([Buffer.from('bye')]));
    await app.services.transactions.run(app.operator, (tx) => subscription().handle(tx, event(key), app.services));
    expect(await blobStoreFor(app.config).stat(key)).toBeNull();
    await expect(
      app.services.transactions.run(app.operator, (tx) => subscription().handle(tx, event(key), app.services)),
    ).resolves.toBeUndefined();
  });

  it('a storage error fails the delivery, so it is retried', async () => {
    const key = randomUUID();
    const deliver = () =>
      app.services.transactions.run(app.operator, (tx) => subscription().handle(tx, event(key), app.services));
    if (driver.name === 'local') {
      // A directory where the blob should be: removing it is a storage error, not "missing".
      const dir = driver.files.dir!;
      mkdirSync(join(dir, key.slice(0, 2), key, 'inside'), { recursive: true });
      await expect(deliver()).rejects.toThrow();
      rmSync(join(dir, key.slice(0, 2), key), { recursive: true });
    } else {
      // The bucket unreachable: STORAGE_UNAVAILABLE, not "missing".
      await blobStoreFor(app.config).put(key, Readable.from([Buffer.from('stays')]));
      await driver.server!.stop();
      try {
        await expect(deliver()).rejects.toMatchObject({ code: 'STORAGE_UNAVAILABLE' });
      } finally {
        await driver.server!.start();
      }
      await deliver();
      expect(await driver.has(key)).toBe(false);
    }
  });
});
