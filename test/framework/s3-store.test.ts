import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { S3Store, STORAGE_RETRY_AFTER_SECONDS } from '../../framework/storage/s3.ts';
import { startS3Server, type S3Server } from '../helpers/s3.ts';
import { startTestApp, createCustomer, signInAs, type TestApp } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import { form } from '../modules/file/helpers.ts';

const MiB = 1024 * 1024;

let server: S3Server;
let store: S3Store;
const warnings: { details: Record<string, unknown>; message: string }[] = [];

beforeAll(async () => {
  server = await startS3Server();
  store = new S3Store(server.settings('blobs/'), {
    log: { warn: (details, message) => void warnings.push({ details: details as Record<string, unknown>, message }) },
  });
});
afterAll(async () => {
  await server?.close();
});

const sha256 = (buffers: Buffer[]) => buffers.reduce((h, b) => h.update(b), createHash('sha256')).digest('hex');
async function read(stream: Readable | Promise<Readable>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
/** `count` chunks of 64 KiB, then (if given) the stream fails with `error`. */
function chunks(count: number, error?: Error): Readable {
  let sent = 0;
  return new Readable({
    read() {
      if (sent === count) {
        if (error) this.destroy(error);
        else this.push(null);
        return;
      }
      this.push(Buffer.alloc(64 * 1024, sent++ % 251));
    },
  });
}

describe('BlobStore: an S3 bucket (s3rver on loopback)', () => {
  it('declares that it can seek and list', () => {
    expect(store.capabilities).toEqual({ seekable: true, listable: true });
  });

  it('takes a UUID as the key and nothing else', async () => {
    for (const key of ['../escape', 'notes.txt', `${randomUUID()}/x`, randomUUID().toUpperCase(), '']) {
      await expect(store.put(key, Readable.from(['x']))).rejects.toThrow(/not a blob key/);
      await expect(store.stat(key)).rejects.toThrow(/not a blob key/);
    }
  });

  it('stores under <prefix><key>, stats, opens all or a range, and removes; removing a missing blob answers false', async () => {
    const key = randomUUID();
    await store.put(key, Readable.from([Buffer.from('abcdef'), Buffer.from('ghij')]));
    expect(await server.keys()).toContain(`blobs/${key}`);
    const stat = await store.stat(key);
    expect(stat?.size).toBe(10);
    expect(stat?.mtime).toBeInstanceOf(Date);
    expect((await read(store.open(key))).toString()).toBe('abcdefghij');
    expect((await read(store.open(key, { start: 2, end: 5 }))).toString()).toBe('cdef');
    expect(await store.remove(key)).toBe(true);
    expect(await store.remove(key)).toBe(false);
    expect(await store.stat(key)).toBeNull();
    await expect(store.open(key)).rejects.toMatchObject({ code: 'BLOB_MISSING' });
  });

  it('a large blob goes up in parts and comes back byte for byte', async () => {
    const key = randomUUID();
    // 20 MiB: four 5 MiB parts, several in flight at once.
    await store.put(key, chunks(320));
    expect((await store.stat(key))?.size).toBe(20 * MiB);
    const expected = sha256(Array.from({ length: 320 }, (_, i) => Buffer.alloc(64 * 1024, i % 251)));
    expect(sha256([await read(store.open(key))])).toBe(expected);
    await store.remove(key);
  });

  it("a put whose source fails leaves no object, and rethrows the source's error (a single part, never sent)", async () => {
    const key = randomUUID();
    await expect(store.put(key, chunks(3, new Error('client gone')))).rejects.toThrow('client gone');
    expect(await store.stat(key)).toBeNull();
  });

  it('a multipart put whose source fails leaves no object; the abort that s3rver refuses (405) is logged, not thrown', async () => {
    const key = randomUUID();
    warnings.length = 0;
    // Past the first 5 MiB part: the multipart upload exists when the source fails.
    await expect(store.put(key, chunks(200, new Error('limit reached')))).rejects.toThrow('limit reached');
    expect(await store.stat(key)).toBeNull();
    expect(await server.keys()).not.toContain(`blobs/${key}`);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.message).toMatch(/AbortIncompleteMultipartUpload/);
    expect(warnings[0]!.details).toMatchObject({ key: `blobs/${key}`, uploadId: expect.any(String) });
  });

  it('a bucket lost in the middle of a multipart put: STORAGE_UNAVAILABLE, the source is read no further, and no object', async () => {
    const key = randomUUID();
    const CHUNKS = 1000; // 62.5 MiB
    let sent = 0;
    const source = new Readable({
      read() {
        if (sent === CHUNKS) {
          this.push(null);
          return;
        }
        const next = () => this.push(Buffer.alloc(64 * 1024, sent++ % 251));
        // After 12.5 MiB: two parts have gone up, or are going, when the server disappears.
        if (sent === 200) void server.stop().then(next);
        else next();
      },
    });
    try {
      await expect(store.put(key, source)).rejects.toMatchObject({ code: 'STORAGE_UNAVAILABLE', status: 503 });
      // The part buffers (three) filled and the failed parts stopped the upload: the rest was never read.
      expect(sent).toBeLessThan(CHUNKS);
    } finally {
      await server.start();
    }
    expect(await store.stat(key)).toBeNull();
    expect(await server.keys()).not.toContain(`blobs/${key}`);
  });

  it('lists the keys under its prefix modified before a time, page by page; keys outside the prefix and other names are not its own', async () => {
    const paged = new S3Store(server.settings('listed/'), { listPageSize: 2 });
    const keys = Array.from({ length: 5 }, () => randomUUID());
    for (const key of keys) await paged.put(key, Readable.from(['x']));
    await server.client.send(new PutObjectCommand({ Bucket: server.bucket, Key: 'listed/not-a-key', Body: 'x' }));
    await server.client.send(
      new PutObjectCommand({ Bucket: server.bucket, Key: `elsewhere/${randomUUID()}`, Body: 'x' }),
    );
    const listed = async (before: Date) => {
      const found: string[] = [];
      for await (const key of paged.list(before)) found.push(key);
      return found.sort();
    };
    expect(await listed(new Date(Date.now() + 60_000))).toEqual([...keys].sort());
    expect(await listed(new Date(Date.now() - 60_000))).toEqual([]);
    // DeleteObjects: one request for the batch.
    expect(await paged.removeMany(keys)).toBe(5);
    expect(await listed(new Date(Date.now() + 60_000))).toEqual([]);
    expect(await server.keys()).toEqual(expect.arrayContaining(['listed/not-a-key']));
  });

  it('an unreachable bucket is STORAGE_UNAVAILABLE (503, Retry-After) for every operation, and the check fails; all recover when it returns', async () => {
    const key = randomUUID();
    await store.put(key, Readable.from(['kept']));
    await server.stop();
    try {
      const unavailable = {
        code: 'STORAGE_UNAVAILABLE',
        status: 503,
        extensions: { retryAfterSeconds: STORAGE_RETRY_AFTER_SECONDS },
      };
      await expect(store.put(randomUUID(), Readable.from(['x']))).rejects.toMatchObject(unavailable);
      await expect(store.stat(key)).rejects.toMatchObject(unavailable);
      await expect(store.open(key)).rejects.toMatchObject(unavailable);
      await expect(store.remove(key)).rejects.toMatchObject(unavailable);
      await expect(store.removeMany([key])).rejects.toMatchObject(unavailable);
      await expect(
        (async () => {
          for await (const _ of store.list(new Date())) void _;
        })(),
      ).rejects.toMatchObject(unavailable);
      await expect(store.check()).rejects.toThrow(/bucket tenantry-test/);
    } finally {
      await server.start();
    }
    await store.check();
    expect((await read(store.open(key))).toString()).toBe('kept');
    expect(await store.remove(key)).toBe(true);
  });
});

describe('the service on files.storage s3', () => {
  let app: TestApp;
  let host: string;
  let cookie: string;

  beforeAll(async () => {
    app = await startTestApp({
      config: testConfig({ files: { storage: 's3', s3: server.settings('service/'), max_bytes: 8 * MiB } }),
    });
    const tenant = await createCustomer(app, 'bucket', 'bucket.localhost');
    host = 'bucket.localhost';
    cookie = (await signInAs(app, tenant, ['file:read', 'file:manage'])).cookie;
  });
  afterAll(async () => {
    await app?.close();
  });

  const upload = (content: string | Buffer, mediaType = 'text/plain') => {
    const { body, type } = form([{ name: 'file', filename: 'a.txt', type: mediaType, content }]);
    return app
      .http(host)
      .post('/api/v1/file/files?visibility=private')
      .set('Cookie', cookie)
      .set('Content-Type', type)
      .send(body);
  };
  const rows = async () =>
    (await app.services.db.pool.query<{ n: number }>('select count(*)::int as n from files')).rows[0]!.n;

  it('an upload past one part goes up in parts through the request path, counted and hashed, and downloads whole', async () => {
    const content = Buffer.alloc(7 * MiB + 123, 7);
    const up = await upload(content, 'application/octet-stream');
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    expect(up.body).toMatchObject({ size: content.length, sha256: sha256([content]) });
    const down = await app
      .http(host)
      .get(`/api/v1/file/files/${up.body.id}/content`)
      .set('Cookie', cookie)
      .buffer(true)
      .parse((r, done) => {
        const chunks: Buffer[] = [];
        r.on('data', (c: Buffer) => chunks.push(c));
        r.on('end', () => done(null, Buffer.concat(chunks)));
      });
    expect(sha256([down.body as Buffer])).toBe(sha256([content]));
  });

  it('an upload refused past files.max_bytes after its first part leaves no object and no row; the refused abort is only logged', async () => {
    const before = await server.keys();
    const rowsBefore = await rows();
    // One byte past the limit, inside the form's envelope: refused as the bytes flow, after a 5 MiB part went up.
    const refused = await upload(Buffer.alloc(8 * MiB + 1, 1), 'application/octet-stream');
    expect([refused.status, refused.body.code]).toEqual([413, 'FILE_TOO_LARGE']);
    expect(await server.keys()).toEqual(before);
    expect(await rows()).toBe(rowsBefore);
  });

  it('/ready checks the bucket (HeadBucket) after the database', async () => {
    const ready = await app.http('10.0.0.1').get('/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.checks.slice(0, 2)).toEqual([
      { name: 'database', ok: true },
      { name: 'storage', ok: true },
    ]);
  });

  it('with the bucket unreachable: an upload is 503 STORAGE_UNAVAILABLE with Retry-After and writes no row, a download too, /ready names storage; all recover', async () => {
    const kept = await upload('stored before the outage');
    expect(kept.status).toBe(201);
    const before = await rows();
    await server.stop();
    try {
      const refused = await upload('not stored');
      expect(refused.status).toBe(503);
      expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(refused.headers['retry-after']).toBe(String(STORAGE_RETRY_AFTER_SECONDS));
      expect(refused.body.code).toBe('STORAGE_UNAVAILABLE');
      expect(await rows()).toBe(before);
      const download = await app.http(host).get(`/api/v1/file/files/${kept.body.id}/content`).set('Cookie', cookie);
      expect([download.status, download.body.code, download.headers['retry-after']]).toEqual([
        503,
        'STORAGE_UNAVAILABLE',
        String(STORAGE_RETRY_AFTER_SECONDS),
      ]);
      const ready = await app.http('10.0.0.1').get('/ready');
      expect(ready.status).toBe(503);
      expect(ready.body.check).toBe('storage');
      // The admin health page runs the same check.
      const operator = await signInAs(app, app.operator, []);
      const health = await app
        .http('operator.localhost')
        .get('/admin/health/storage')
        .set('Cookie', operator.cookie)
        .set('HX-Request', 'true');
      expect(health.text).toContain('data-ok="false"');
    } finally {
      await server.start();
    }
    expect((await app.http('10.0.0.1').get('/ready')).status).toBe(200);
    const again = await upload('stored after the outage');
    expect(again.status).toBe(201);
    const download = await app.http(host).get(`/api/v1/file/files/${kept.body.id}/content`).set('Cookie', cookie);
    expect(download.text).toBe('stored before the outage');
  });
});
