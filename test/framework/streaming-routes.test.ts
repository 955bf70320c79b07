import { beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import Fastify from 'fastify';
import { createCustomer, signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { streamFrom } from '../../framework/http/stream.ts';
import { installProblemHandlers } from '../../framework/http/problems.ts';
import { TESTKIT_FILES, UPLOAD_LIMIT } from '../helpers/testkit-module.ts';

const HOST = 'streams.localhost';
const UPLOADS = '/api/v1/testkit/uploads';
const NOTES = '/api/v1/testkit/notes';
const FILE = '/api/v1/testkit/files/digits.txt';
const STREAMED = '/api/v1/testkit/streamed-files/digits.txt';
const DIGITS = readFileSync(join(TESTKIT_FILES, 'digits.txt'), 'utf8');

let cookie: string;

const t = useTestApp();
beforeAll(async () => {
  const tenant = await createCustomer(t.app, 'streams', HOST);
  cookie = (await signInAs(t.app, tenant, ['widget:read', 'widget:write'])).cookie;
});

const http = () => t.app.http(HOST);
const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

/** A multipart form with one file part, built by hand so its exact length is known. */
function form(content: Buffer, filename = 'notes.txt'): { body: Buffer; type: string } {
  const boundary = 'tenantry-test-boundary';
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: text/plain\r\n\r\n`;
  const tail = `\r\n--${boundary}--\r\n`;
  return {
    body: Buffer.concat([Buffer.from(head), content, Buffer.from(tail)]),
    type: `multipart/form-data; boundary=${boundary}`,
  };
}
/** A form whose whole body is exactly `total` bytes. */
function formOfLength(total: number): { body: Buffer; type: string; content: Buffer } {
  const envelope = form(Buffer.alloc(0)).body.length;
  const content = Buffer.alloc(total - envelope, 'a');
  return { ...form(content), content };
}

function expectProblem(
  res: { status: number; headers: Record<string, string>; body: { code?: string } },
  status: number,
  code: string,
): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body.code).toBe(code);
}

describe("multipart uploads through @fastify/multipart, bounded by the route's bodyLimit", () => {
  it('streams the file part to the handler', async () => {
    const content = Buffer.from('hello, multipart');
    const res = await http()
      .post(UPLOADS)
      .set('Cookie', cookie)
      .attach('file', content, { filename: 'hello.txt', contentType: 'text/plain' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({
      filename: 'hello.txt',
      mimetype: 'text/plain',
      size: content.length,
      sha256: sha256(content),
    });
  });

  it('keeps a form of exactly the limit and refuses one byte more with 413 PAYLOAD_TOO_LARGE', async () => {
    const exact = formOfLength(UPLOAD_LIMIT);
    expect(exact.body.length).toBe(UPLOAD_LIMIT);
    const kept = await http().post(UPLOADS).set('Cookie', cookie).set('Content-Type', exact.type).send(exact.body);
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
    expect(kept.body).toMatchObject({ size: exact.content.length, sha256: sha256(exact.content) });
    const over = formOfLength(UPLOAD_LIMIT + 1);
    expectProblem(
      await http().post(UPLOADS).set('Cookie', cookie).set('Content-Type', over.type).send(over.body),
      413,
      'PAYLOAD_TOO_LARGE',
    );
  });

  it('refuses a form sent without Content-Length (chunked) with 411 LENGTH_REQUIRED', async () => {
    const { body, type } = form(Buffer.from('chunked'));
    const res = await t.app.web!.inject({
      method: 'POST',
      url: UPLOADS,
      headers: { host: HOST, cookie, 'content-type': type, 'transfer-encoding': 'chunked' },
      payload: Readable.from([body]),
    });
    expectProblem(
      { status: res.statusCode, headers: res.headers as Record<string, string>, body: res.json() },
      411,
      'LENGTH_REQUIRED',
    );
  });

  it('refuses a JSON body on the multipart route, and a form on a JSON route, with 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    expectProblem(
      await http().post(UPLOADS).set('Cookie', cookie).send({ file: 'not a form' }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    const { body, type } = form(Buffer.from('a form'));
    expectProblem(
      await http().post(NOTES).set('Cookie', cookie).set('Content-Type', type).send(body),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    expectProblem(
      await http().post('/api/v1/testkit/widgets').set('Cookie', cookie).set('Content-Type', type).send(body),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
  });

  it('still guards the route: no session is 401, no permission 403', async () => {
    const content = Buffer.from('x');
    expectProblem(await http().post(UPLOADS).attach('file', content, 'x.txt'), 401, 'AUTH_REQUIRED');
    const reader = (await signInAs(t.app, (await t.app.services.hosts.resolve(HOST))!, ['widget:read'])).cookie;
    expectProblem(
      await http().post(UPLOADS).set('Cookie', reader).attach('file', content, 'x.txt'),
      403,
      'AUTH_FORBIDDEN',
    );
  });

  it('documents the form as multipart/form-data, with 411, 413 and 415', async () => {
    const op = (await t.app.http().get('/api/v1/openapi.json')).body.paths[UPLOADS].post;
    expect(op.requestBody.content['multipart/form-data'].schema.properties.file).toMatchObject({
      type: 'string',
      format: 'binary',
    });
    expect(op.requestBody.content['application/json']).toBeUndefined();
    for (const status of ['411', '413', '415']) expect(op.responses[status], status).toBeDefined();
  });
});

describe('per-route bodyLimit on a JSON route', () => {
  it("accepts a body within the route's limit and refuses a larger one with 413 PAYLOAD_TOO_LARGE", async () => {
    const ok = await http().post(NOTES).set('Cookie', cookie).send({ text: 'short' });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ length: 5 });
    // 64 bytes is this route's limit; the app's default (1 MiB) would take it.
    expectProblem(
      await http()
        .post(NOTES)
        .set('Cookie', cookie)
        .send({ text: 'x'.repeat(60) }),
      413,
      'PAYLOAD_TOO_LARGE',
    );
  });

  it("leaves other routes at the t.app's default of 1 MiB", async () => {
    const res = await http()
      .post('/api/v1/testkit/widgets')
      .set('Cookie', cookie)
      .send({ name: 'long-note', size: 1, color: 'red', note: 'x'.repeat(400) });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  });
});

describe('responses streamed from a seekable source (@fastify/send): ranges, HEAD, conditional requests', () => {
  const get = (url = FILE) => http().get(url).set('Cookie', cookie);

  it('answers a full GET with Content-Length, Accept-Ranges, a weak ETag and Last-Modified', async () => {
    const res = await get();
    expect(res.status).toBe(200);
    expect(res.text).toBe(DIGITS);
    expect(res.headers['content-length']).toBe('100');
    expect(res.headers['accept-ranges']).toBe('bytes');
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers.etag).toMatch(/^W\/"/);
    expect(new Date(res.headers['last-modified']!).getTime()).toBe(
      Math.floor(statSync(join(TESTKIT_FILES, 'digits.txt')).mtimeMs / 1000) * 1000,
    );
    // A download behind a permission depends on who asks: no cache keeps it (the route wrapper's rule).
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('answers HEAD with the same headers and no body', async () => {
    const res = await http().head(FILE).set('Cookie', cookie);
    expect(res.status).toBe(200);
    expect(res.headers['content-length']).toBe('100');
    expect(res.headers['accept-ranges']).toBe('bytes');
    expect(res.text ?? '').toBe('');
  });

  it('answers a range with 206 and Content-Range', async () => {
    const res = await get().set('Range', 'bytes=10-19');
    expect(res.status).toBe(206);
    expect(res.text).toBe(DIGITS.slice(10, 20));
    expect(res.headers['content-range']).toBe('bytes 10-19/100');
    expect(res.headers['content-length']).toBe('10');
  });

  it('answers a suffix range (the last n bytes) and an open-ended one', async () => {
    const suffix = await get().set('Range', 'bytes=-5');
    expect(suffix.status).toBe(206);
    expect(suffix.text).toBe(DIGITS.slice(95));
    expect(suffix.headers['content-range']).toBe('bytes 95-99/100');
    const open = await get().set('Range', 'bytes=97-');
    expect(open.status).toBe(206);
    expect(open.text).toBe(DIGITS.slice(97));
  });

  it('refuses an unsatisfiable range with a 416 RANGE_NOT_SATISFIABLE problem giving the size', async () => {
    const res = await get().set('Range', 'bytes=100-200');
    expectProblem(res, 416, 'RANGE_NOT_SATISFIABLE');
    expect(res.headers['content-range']).toBe('bytes */100');
  });

  it('answers If-None-Match naming the ETag, or If-Modified-Since not older, with 304 and no body', async () => {
    const first = await get();
    const byTag = await get().set('If-None-Match', first.headers.etag!);
    expect(byTag.status).toBe(304);
    expect(byTag.text ?? '').toBe('');
    expect(byTag.headers.etag).toBe(first.headers.etag);
    const byDate = await get().set('If-Modified-Since', first.headers['last-modified']!);
    expect(byDate.status).toBe(304);
    expect((await get().set('If-None-Match', 'W/"other"')).status).toBe(200);
    expect((await get().set('If-Modified-Since', 'Thu, 01 Jan 1970 00:00:00 GMT')).status).toBe(200);
  });

  it('refuses a failed If-Match with 412 PRECONDITION_FAILED', async () => {
    expectProblem(await get().set('If-Match', '"not-the-tag"'), 412, 'PRECONDITION_FAILED');
  });

  it('answers a conditional HEAD with 304 and no length', async () => {
    const etag = (await get()).headers.etag!;
    const res = await http().head(FILE).set('Cookie', cookie).set('If-None-Match', etag);
    expect(res.status).toBe(304);
    expect(res.headers['content-length']).toBeUndefined();
  });

  it('answers 404 NOT_FOUND for a missing file, and stays guarded', async () => {
    expectProblem(await get('/api/v1/testkit/files/missing.txt'), 404, 'NOT_FOUND');
    expectProblem(await http().get(FILE), 401, 'AUTH_REQUIRED');
  });

  it('never serves a path outside the root, a hidden file or a directory (404 NOT_FOUND)', async () => {
    // The helper on its own, behind a route that passes any path through.
    const bare = Fastify();
    installProblemHandlers(bare);
    bare.get('/raw/*', (request, reply) =>
      streamFrom(request, reply, { root: TESTKIT_FILES, path: (request.params as { '*': string })['*'] }),
    );
    try {
      expect((await bare.inject('/raw/digits.txt')).statusCode).toBe(200);
      for (const path of [
        '..%2F..%2F..%2Fpackage.json',
        'nested%2F..%2F..%2Fapp.ts',
        '.hidden',
        '',
        'nested/..',
        '%00digits.txt',
      ]) {
        const res = await bare.inject(`/raw/${path}`);
        expect(res.statusCode, path).toBe(404);
        expect(res.json().code, path).toBe('NOT_FOUND');
      }
    } finally {
      await bare.close();
    }
  });
});

describe('responses streamed from a source that cannot seek (a stream factory with size and mtime)', () => {
  const get = () => http().get(STREAMED).set('Cookie', cookie);

  it('sends the whole content with Content-Length and validators, and ignores Range', async () => {
    const res = await get();
    expect(res.status).toBe(200);
    expect(res.text).toBe(DIGITS);
    expect(res.headers['content-length']).toBe('100');
    expect(res.headers['content-type']).toBe('text/plain');
    expect(res.headers['accept-ranges']).toBeUndefined();
    // The same validators as the seekable route gives the same file.
    expect(res.headers.etag).toBe((await http().get(FILE).set('Cookie', cookie)).headers.etag);
    const ranged = await get().set('Range', 'bytes=0-9');
    expect(ranged.status).toBe(200);
    expect(ranged.text).toBe(DIGITS);
  });

  it('answers HEAD without opening the stream, and conditional requests with 304', async () => {
    const head = await http().head(STREAMED).set('Cookie', cookie);
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe('100');
    const etag = head.headers.etag!;
    expect((await get().set('If-None-Match', etag)).status).toBe(304);
    expect((await get().set('If-Modified-Since', head.headers['last-modified']!)).status).toBe(304);
    // If-None-Match decides when present, whatever If-Modified-Since says.
    expect(
      (await get().set('If-None-Match', 'W/"other"').set('If-Modified-Since', head.headers['last-modified']!)).status,
    ).toBe(200);
  });
});
