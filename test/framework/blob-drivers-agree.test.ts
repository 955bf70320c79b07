import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, createCustomer, signInAs, type TestApp } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import { form, tempFilesDir } from '../modules/file/helpers.ts';
import { startS3Server, type S3Server } from '../helpers/s3.ts';
import { rmSync } from 'node:fs';

/**
 * SPEC Files rule 5-6 on both drivers at once: the same file, asked the same way, through a
 * service on the local disk (@fastify/send) and one on an S3 bucket (HeadObject, ranged
 * GetObject), gets the same status, the same body and the same headers.
 */

const CONTENT = 'abcdefghijklmnopqrstuvwxyz';
const HOST = 'agree.localhost';

interface Side {
  app: TestApp;
  cookie: string;
  url: string;
  lastModified: string;
  etag: string;
}

let server: S3Server;
const dir = tempFilesDir();
const sides: Record<'local' | 's3', Side> = {} as never;

async function side(files: NonNullable<Parameters<typeof testConfig>[0]>['files']): Promise<Side> {
  const app = await startTestApp({ config: testConfig({ files }) });
  const tenant = await createCustomer(app, 'agree', HOST);
  const { cookie } = await signInAs(app, tenant, ['file:read', 'file:manage']);
  const { body, type } = form([{ name: 'file', filename: 'notes.zip', type: 'application/zip', content: CONTENT }]);
  const up = await app
    .http(HOST)
    .post('/api/v1/file/files?visibility=private')
    .set('Cookie', cookie)
    .set('Content-Type', type)
    .send(body);
  expect(up.status).toBe(201);
  const url = `/api/v1/file/files/${up.body.id}/content`;
  const first = await app.http(HOST).get(url).set('Cookie', cookie);
  return { app, cookie, url, lastModified: first.headers['last-modified']!, etag: first.headers.etag! };
}

beforeAll(async () => {
  server = await startS3Server();
  sides.local = await side({ dir });
  sides.s3 = await side({ storage: 's3', s3: server.settings() });
});
afterAll(async () => {
  await sides.local?.app.close();
  await sides.s3?.app.close();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

const FUTURE = new Date(Date.now() + 86_400_000).toUTCString();
const PAST = new Date('2000-01-01T00:00:00Z').toUTCString();

/** Request headers, given the side's own validators (each side's file has its own mtime). */
const CASES: Record<string, (s: Side) => Record<string, string>> = {
  plain: () => ({}),
  'one range': () => ({ range: 'bytes=2-5' }),
  'open range': () => ({ range: 'bytes=20-' }),
  suffix: () => ({ range: 'bytes=-3' }),
  'suffix longer than the file': () => ({ range: 'bytes=-100001' }),
  'past the end': () => ({ range: 'bytes=100-200' }),
  'last byte clamped': () => ({ range: 'bytes=25-1000' }),
  'several ranges': () => ({ range: 'bytes=0-1,4-5' }),
  malformed: () => ({ range: 'bytes=1e3-2e3' }),
  reversed: () => ({ range: 'bytes=5-2' }),
  'other unit': () => ({ range: 'items=0-5' }),
  'If-None-Match hit': (s) => ({ 'if-none-match': s.etag }),
  'If-None-Match miss': () => ({ 'if-none-match': '"other"' }),
  'If-Modified-Since its Last-Modified': (s) => ({ 'if-modified-since': s.lastModified }),
  'If-Modified-Since long ago': () => ({ 'if-modified-since': PAST }),
  'If-Unmodified-Since long ago': () => ({ 'if-unmodified-since': PAST }),
  'If-Unmodified-Since tomorrow': () => ({ 'if-unmodified-since': FUTURE }),
  'If-Match hit': (s) => ({ 'if-match': s.etag }),
  'If-Match miss': () => ({ 'if-match': '"other"' }),
  'If-Match any': () => ({ 'if-match': '*' }),
  'If-Range current tag': (s) => ({ range: 'bytes=0-2', 'if-range': s.etag }),
  'If-Range other tag': () => ({ range: 'bytes=0-2', 'if-range': '"other"' }),
  'If-Range tomorrow': () => ({ range: 'bytes=0-2', 'if-range': FUTURE }),
  'If-Range long ago': () => ({ range: 'bytes=0-2', 'if-range': PAST }),
};

/** What must agree: status, body, and every header but those that differ by nature (time, request id). */
async function answer(s: Side, method: 'get' | 'head', headers: Record<string, string>) {
  let req = s.app.http(HOST)[method](s.url).set('Cookie', s.cookie);
  for (const [name, value] of Object.entries(headers)) req = req.set(name, value);
  const res = await req.buffer(true).parse((r, done) => {
    const chunks: Buffer[] = [];
    r.on('data', (c: Buffer) => chunks.push(c));
    r.on('end', () => done(null, Buffer.concat(chunks)));
  });
  const {
    date: _date,
    'x-request-id': _id,
    'last-modified': lastModified,
    connection: _c,
    'keep-alive': _k,
    ...rest
  } = res.headers as Record<string, string>;
  // A HEAD answer has no body.
  const body = Buffer.isBuffer(res.body) ? res.body.toString() : '';
  const problem =
    body !== '' && rest['content-type']?.startsWith('application/problem+json')
      ? (JSON.parse(body) as { code: string; detail: string })
      : undefined;
  return {
    status: res.status,
    headers: { ...rest, 'last-modified': lastModified === undefined ? 'absent' : 'present' },
    body: problem ? { code: problem.code, detail: problem.detail } : body,
  };
}

describe('Files rule 5-6: the local disk and an S3 bucket answer downloads alike', () => {
  for (const method of ['get', 'head'] as const) {
    for (const [name, headers] of Object.entries(CASES)) {
      it(`${method.toUpperCase()} ${name}`, async () => {
        const [local, s3] = [
          await answer(sides.local, method, headers(sides.local)),
          await answer(sides.s3, method, headers(sides.s3)),
        ];
        expect(s3).toEqual(local);
      });
    }
  }

  it('the answers are the expected ones, not merely the same', async () => {
    const get = (headers: Record<string, string>) => answer(sides.s3, 'get', headers);
    expect(await get({ range: 'bytes=2-5' })).toMatchObject({
      status: 206,
      body: 'cdef',
      headers: { 'content-range': 'bytes 2-5/26', 'accept-ranges': 'bytes' },
    });
    expect((await get({ range: 'bytes=100-200' })).status).toBe(416);
    expect((await get({ 'if-none-match': sides.s3.etag })).status).toBe(304);
    expect((await get({ 'if-match': '"other"' })).status).toBe(412);
    expect(await get({})).toMatchObject({
      status: 200,
      body: CONTENT,
      headers: { 'content-type': 'application/zip', 'cache-control': 'no-store', 'content-length': '26' },
    });
  });
});
