import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { problemDeclaration, type ProblemCode } from '../../framework/errors.ts';
import { codeLikeText } from '../helpers/readable-text.ts';

/**
 * Rule: every failure is application/problem+json with a stable code, also the ones fastify's
 * router and Node's HTTP parser answer before any route runs. Each case is sent over a raw socket
 * to a listening server, since an HTTP client would refuse to send most of them.
 */

let app: TestApp;
let port: number;

beforeAll(async () => {
  app = await startTestApp();
  await app.web!.listen({ host: '127.0.0.1', port: 0 });
  port = (app.web!.server.address() as { port: number }).port;
});
afterAll(async () => {
  await app?.close();
});

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Writes the bytes as they are and reads the answer until the server closes the connection. */
function send(raw: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    const chunks: Buffer[] = [];
    socket.setTimeout(5_000, () => socket.destroy(new Error(`no answer to ${JSON.stringify(raw.slice(0, 80))}`)));
    socket.on('data', (c: Buffer) => chunks.push(c));
    // A server that refuses early may reset the connection while the rest is still being written.
    socket.on('error', (err: NodeJS.ErrnoException) =>
      chunks.length > 0 && err.code === 'ECONNRESET' ? finish() : reject(err),
    );
    socket.on('close', () => finish());
    let done = false;
    function finish() {
      if (done) return;
      done = true;
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...headerLines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of headerLines) {
        const at = line.indexOf(':');
        headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    }
    socket.write(raw);
  });
}

function expectProblem(answer: RawAnswer, code: ProblemCode): void {
  const declared = problemDeclaration(code)!;
  expect(answer.status, answer.body).toBe(declared.status);
  expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(answer.headers['x-content-type-options']).toBe('nosniff');
  const body = JSON.parse(answer.body) as Record<string, unknown>;
  expect(body).toMatchObject({ code, status: declared.status, title: declared.title });
  expect(typeof body.detail).toBe('string');
  expect(answer.body).not.toMatch(/FST_ERR|statusCode|HPE_/);
}

const HOST = 'Host: operator.localhost\r\n';

describe('failures before any route runs are problem documents', () => {
  it('a bad percent-encoding in the path: 400 MALFORMED_REQUEST', async () => {
    expectProblem(
      await send(`GET /api/v1/testkit/widgets/%E0%A4%A HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`),
      'MALFORMED_REQUEST',
    );
  });

  it('a path parameter over the router’s length limit: 414 URI_TOO_LONG', async () => {
    expectProblem(
      await send(`GET /api/v1/testkit/widgets/${'a'.repeat(200)} HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`),
      'URI_TOO_LONG',
    );
  });

  it('headers over 16 KB: 431 HEADERS_TOO_LARGE', async () => {
    expectProblem(
      await send(
        `GET /api/v1/auth/me HTTP/1.1\r\n${HOST}X-Padding: ${'a'.repeat(17 * 1024)}\r\nConnection: close\r\n\r\n`,
      ),
      'HEADERS_TOO_LARGE',
    );
  });

  it('an unknown method: 400 MALFORMED_REQUEST, through the client error handler', async () => {
    expectProblem(await send(`BREW /api/v1/auth/me HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`), 'MALFORMED_REQUEST');
  });

  it('a bad Content-Length: 400 MALFORMED_REQUEST, through the client error handler', async () => {
    expectProblem(
      await send(
        `POST /api/v1/auth/login HTTP/1.1\r\n${HOST}Content-Type: application/json\r\nContent-Length: ten\r\nConnection: close\r\n\r\n{}`,
      ),
      'MALFORMED_REQUEST',
    );
  });

  it('a Content-Length the body does not match: 400 MALFORMED_REQUEST (not 415)', async () => {
    const res = await app.web!.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      headers: { host: 'operator.localhost', 'content-type': 'application/json', 'content-length': '10' },
      payload: '{}',
    });
    expectProblem(
      { status: res.statusCode, headers: res.headers as Record<string, string>, body: res.body },
      'MALFORMED_REQUEST',
    );
  });

  it('an HTTP/1.1 request with no Host header: 400 MALFORMED_REQUEST', async () => {
    const answer = await send('GET /api/v1/auth/me HTTP/1.1\r\nConnection: close\r\n\r\n');
    expectProblem(answer, 'MALFORMED_REQUEST');
    expect(JSON.parse(answer.body).detail).toMatch(/Host/);
  });

  it('an HTTP/1.0 probe with no Host header is still answered', async () => {
    const answer = await send('GET /health HTTP/1.0\r\n\r\n');
    expect(answer.status).toBe(200);
  });

  // RFC 9112 3.2: more than one Host is a 400. Node keeps the first; a proxy in front may route by
  // the last, so the tenant the service answers for would not be the one the proxy chose.
  it('a request with two Host headers: 400 MALFORMED_REQUEST, the first naming a tenant or not', async () => {
    for (const hosts of [`${HOST}Host: nobody.localhost\r\n`, `Host: nobody.localhost\r\n${HOST}`, `${HOST}${HOST}`]) {
      const answer = await send(`GET /api/v1/auth/me HTTP/1.1\r\n${hosts}Connection: close\r\n\r\n`);
      expectProblem(answer, 'MALFORMED_REQUEST');
      expect(JSON.parse(answer.body).detail).toMatch(/Host/);
    }
  });

  // RFC 9112 3.2.2: an absolute-form target names the host; the router routes its path alone, and
  // the tenant comes from Host, so a target naming another host must not be answered as Host's.
  it('an absolute-form target naming a host other than Host: 400 MALFORMED_REQUEST; naming the same, answered', async () => {
    const other = await send(`GET http://nobody.localhost/api/v1/auth/me HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`);
    expectProblem(other, 'MALFORMED_REQUEST');
    expect(JSON.parse(other.body).detail).toMatch(/Host/);
    const same = await send(
      `GET http://Operator.localhost:80/api/v1/auth/me HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`,
    );
    expectProblem(same, 'AUTH_REQUIRED');
  });
});

describe('a method the path does not declare: 405 METHOD_NOT_ALLOWED with Allow (RFC 9110 15.5.6)', () => {
  const allowOf = (answer: RawAnswer) => answer.headers.allow?.split(',').map((m) => m.trim());

  it('names the methods the path declares, for a fixed path, a collection and an item', async () => {
    const me = await send(`PUT /api/v1/auth/me HTTP/1.1\r\n${HOST}Content-Length: 0\r\nConnection: close\r\n\r\n`);
    expectProblem(me, 'METHOD_NOT_ALLOWED');
    expect(allowOf(me)).toEqual(['GET', 'HEAD']);
    const list = await send(`DELETE /api/v1/testkit/widgets HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`);
    expectProblem(list, 'METHOD_NOT_ALLOWED');
    expect(allowOf(list)).toEqual(['GET', 'HEAD', 'POST']);
    const item = await send(
      `PUT /api/v1/testkit/widgets/0190b6f0-0000-7000-8000-000000000000 HTTP/1.1\r\n${HOST}Content-Length: 0\r\nConnection: close\r\n\r\n`,
    );
    expectProblem(item, 'METHOD_NOT_ALLOWED');
    expect(allowOf(item)).toEqual(['GET', 'HEAD', 'PATCH', 'DELETE']);
    const slash = await send(`POST /api/v1/auth/me/ HTTP/1.1\r\n${HOST}Content-Length: 0\r\nConnection: close\r\n\r\n`);
    expectProblem(slash, 'METHOD_NOT_ALLOWED');
    expect(allowOf(slash)).toEqual(['GET', 'HEAD']);
  });

  it('answers the other methods Node accepts the same way (OPTIONS, TRACE, PROPFIND, PURGE)', async () => {
    for (const method of ['OPTIONS', 'TRACE', 'PROPFIND', 'PURGE']) {
      const answer = await send(`${method} /api/v1/auth/login HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`);
      expectProblem(answer, 'METHOD_NOT_ALLOWED');
      expect(allowOf(answer), method).toEqual(['POST']);
    }
  });

  it('answers an admin page the same way, as a 405 page', async () => {
    // The sign-in page takes its own form post (a refusal stays at /admin/login).
    const answer = await send(`DELETE /admin/login HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`);
    expect(answer.status).toBe(405);
    expect(answer.headers['content-type']).toMatch(/^text\/html/);
    expect(allowOf(answer)).toEqual(['GET', 'HEAD', 'POST']);
  });

  it('answers the refusals before routing at an admin address as a page a person reads, the code in data-code', async () => {
    // A browser following a mangled link under /admin read the API's problem document and its code.
    for (const [path, code, status] of [
      ['/admin/task/tasks/%E0%A4%A', 'MALFORMED_REQUEST', 400],
      [`/admin/task/tasks/${'a'.repeat(200)}/edit`, 'URI_TOO_LONG', 414],
    ] as const) {
      const answer = await send(`GET ${path} HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`);
      expect(answer.status, path).toBe(status);
      expect(answer.headers['content-type'], path).toMatch(/^text\/html/);
      expect(answer.headers['content-security-policy'], path).toContain("frame-ancestors 'none'");
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
      expect(answer.body, path).toContain(`data-code="${code}"`);
      expect(codeLikeText(answer.body), path).toEqual([]);
    }
    // The API's addresses keep their problem documents (above).
  });

  it('leaves an unknown path 404 ROUTE_NOT_FOUND, with no Allow', async () => {
    const answer = await send(
      `PUT /api/v1/testkit/nothing-here HTTP/1.1\r\n${HOST}Content-Length: 0\r\nConnection: close\r\n\r\n`,
    );
    expectProblem(answer, 'ROUTE_NOT_FOUND');
    expect(answer.headers.allow).toBeUndefined();
  });

  it('answers CONNECT with a problem document instead of closing the socket', async () => {
    const path = await send(`CONNECT /api/v1/auth/me HTTP/1.1\r\n${HOST}\r\n`);
    expectProblem(path, 'METHOD_NOT_ALLOWED');
    expect(allowOf(path)).toEqual(['GET', 'HEAD']);
    const tunnel = await send(`CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n`);
    expectProblem(tunnel, 'METHOD_NOT_ALLOWED');
    expect(tunnel.headers.allow).toBe('');
  });
});
