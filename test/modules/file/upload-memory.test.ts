import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { startTestApp, createCustomer, signInAs, type TestApp } from '../../helpers/app.ts';
import { testConfig } from '../../helpers/config.ts';
import { FILES } from './helpers.ts';
import { fileDriver, type FileDriver } from './driver.ts';

const MiB = 1024 * 1024;
const UPLOAD_MIB = 1024;
const HOST = 'memory.localhost';

let driver: FileDriver;
let app: TestApp;
let cookie: string;
let port: number;

beforeAll(async () => {
  // The local disk, or an S3 bucket (test/modules/file/driver.ts); s3rver runs in its own process,
  // so this process's RSS is the service's (and the client's, which sends one reused buffer).
  driver = await fileDriver();
  app = await startTestApp({ config: testConfig({ files: { ...driver.files, max_bytes: 2 * UPLOAD_MIB * MiB, quota_bytes: 4 * UPLOAD_MIB * MiB } }) });
  const tenant = await createCustomer(app, 'memory', HOST);
  cookie = (await signInAs(app, tenant, ['file:read', 'file:manage'])).cookie;
  await app.web!.listen({ host: '127.0.0.1', port: 0 });
  port = (app.web!.server.address() as AddressInfo).port;
});
afterAll(async () => {
  await app?.close();
  await driver?.close();
});

/** A form with one file part of `mib` MiB of one reused 1 MiB buffer: the sender allocates nothing per chunk. */
function uploadForm(mib: number): { body: Readable; length: number; type: string } {
  const boundary = 'tenantry-memory-upload';
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="large.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const block = Buffer.alloc(MiB, 0x5a);
  function* parts() {
    yield head;
    for (let i = 0; i < mib; i++) yield block;
    yield tail;
  }
  return { body: Readable.from(parts(), { objectMode: false }), length: head.length + tail.length + mib * MiB, type: `multipart/form-data; boundary=${boundary}` };
}

/** Sends the upload while sampling this process's RSS every 20 ms; the peak growth over the RSS before it. */
async function uploadMeasuringRss(mib: number): Promise<{ status: number; body: string; growthMib: number }> {
  const form = uploadForm(mib);
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  try {
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, method: 'POST', path: `${FILES}?visibility=private`, headers: { host: HOST, cookie, 'content-type': form.type, 'content-length': form.length } },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, body: text }));
        },
      );
      req.on('error', reject);
      form.body.pipe(req);
    });
    peak = Math.max(peak, process.memoryUsage().rss);
    return { ...answer, growthMib: (peak - before) / MiB };
  } finally {
    clearInterval(sampler);
  }
}

describe('Files: memory stays flat during a long upload', () => {
  it(`a 1 GiB upload grows the service's RSS by less than 64 MiB (${process.env.TEST_FILE_DRIVER === 's3' ? 's3' : 'local disk'})`, { timeout: 600_000 }, async () => {
    const answer = await uploadMeasuringRss(UPLOAD_MIB);
    expect(answer.status, answer.body).toBe(201);
    expect(JSON.parse(answer.body).size).toBe(UPLOAD_MIB * MiB);
    console.log(`RSS growth during a ${UPLOAD_MIB} MiB upload on ${driver.name}: ${answer.growthMib.toFixed(1)} MiB`);
    expect(answer.growthMib).toBeLessThan(64);
  });
});
