import { createServer, request as httpRequest, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, createCustomer, signInAs, type TestApp } from '../helpers/app.ts';
import { frontDoor } from '../../framework/http/front-door.ts';

// The public read's 304 answered in the server's request listener, before fastify: only what the
// router would route and answer the same, with the same headers; everything else goes to fastify.
const HOST = 'door.localhost';
const ARTICLES = '/api/v1/testkit/articles';
const PUBLIC = '/api/v1/testkit/public';

let app: TestApp;
let etag: string;

beforeAll(async () => {
  app = await startTestApp();
  const tenant = await createCustomer(app, 'door', HOST);
  const { cookie } = await signInAs(app, tenant, ['article:read', 'article:write']);
  const created = await app
    .http(HOST)
    .post(ARTICLES)
    .set('Cookie', cookie)
    .send({ slug: 'front-page', title: 'Front page', body: 'Body' });
  expect(created.status).toBe(201);
  expect(
    (await app.http(HOST).post(`${ARTICLES}/${created.body.id}/publish`).set('Cookie', cookie).send({})).status,
  ).toBe(200);
  // A full read fills the validator cache, as in production.
  etag = (await app.http(HOST).get(`${PUBLIC}/front-page`)).headers.etag!;
  expect(etag).toMatch(/^W\//);
});
afterAll(async () => {
  await app?.close();
});

/** A bare server with only the front door: what it leaves to the router is answered 599. */
async function doorOnly(
  options: { closing?: () => boolean; logger?: FastifyBaseLogger } = {},
): Promise<{ server: Server; port: number }> {
  const routes = app.services.routes.map(({ route }) => route);
  const door = frontDoor(routes, app.services, options.logger, options.closing ?? (() => false))!;
  expect(door).toBeTypeOf('function');
  const server = createServer((req, res) => {
    if (door(req, res)) return;
    res.writeHead(599);
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

function send(
  port: number,
  path: string,
  headers: Record<string, string>,
  method = 'GET',
): Promise<{ status: number; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method, headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the front door', () => {
  it("answers a current If-None-Match with exactly the headers of the router's 304", async () => {
    const early = await app.http(HOST).get(`${PUBLIC}/front-page`).set('If-None-Match', etag);
    // Percent-encoded, the same slug is the router's: decoded by find-my-way, answered by the route's first hook.
    const routed = await app.http(HOST).get(`${PUBLIC}/front-pag%65`).set('If-None-Match', etag);
    expect(early.status).toBe(304);
    expect(routed.status).toBe(304);
    // The date and the request id (a new one per request on either way) differ by nature.
    const without = (headers: Record<string, string>) =>
      Object.fromEntries(Object.entries(headers).filter(([name]) => name !== 'date' && name !== 'x-request-id'));
    expect(without(early.headers)).toEqual(without(routed.headers));
    expect(early.headers['x-request-id']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(routed.headers['x-request-id']).toMatch(/^[0-9a-f]{8}-/);
    expect(early.headers).toMatchObject({ etag, 'x-content-type-options': 'nosniff' });
  });

  it('answers GET and HEAD, and leaves to the router everything it would not answer the same', async () => {
    const { server, port } = await doorOnly();
    try {
      const current = { host: HOST, 'if-none-match': etag };
      expect((await send(port, `${PUBLIC}/front-page`, current)).status).toBe(304);
      expect((await send(port, `${PUBLIC}/front-page`, current, 'HEAD')).status).toBe(304);
      // The value in its stored form, as the route's own hook and the handler look it up.
      expect((await send(port, `${PUBLIC}/Front-Page`, current)).status).toBe(304);
      const routed: [string, Record<string, string>, string?][] = [
        [`${PUBLIC}/front-page`, { host: HOST, 'if-none-match': 'W/"stale"' }],
        [`${PUBLIC}/front-page`, { host: HOST }],
        [`${PUBLIC}/front-page`, current, 'POST'],
        [`${PUBLIC}/front-pag%65`, current],
        [`${PUBLIC}/front-page/`, current],
        [`${PUBLIC}/front-page?x=1`, current],
        [`${PUBLIC}/${'a'.repeat(101)}`, current],
        [`${PUBLIC}/front-page`, { host: 'nobody.localhost', 'if-none-match': etag }],
        [`${PUBLIC}/front-page`, { host: `other.${HOST}`, 'if-none-match': etag }],
        [`${ARTICLES}/front-page`, current],
      ];
      for (const [path, headers, method] of routed)
        expect(
          (await send(port, path, headers, method)).status,
          `${method ?? 'GET'} ${path} ${JSON.stringify(headers)}`,
        ).toBe(599);
    } finally {
      server.close();
    }
  });

  it('leaves every request to the router once the server is closing', async () => {
    let closing = false;
    const { server, port } = await doorOnly({ closing: () => closing });
    try {
      expect((await send(port, `${PUBLIC}/front-page`, { host: HOST, 'if-none-match': etag })).status).toBe(304);
      closing = true;
      expect((await send(port, `${PUBLIC}/front-page`, { host: HOST, 'if-none-match': etag })).status).toBe(599);
    } finally {
      server.close();
    }
  });

  it('leaves a request with two Host headers to the router, which refuses it (RFC 9112 3.2)', async () => {
    const { server, port } = await doorOnly();
    const raw = (hosts: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port });
        const chunks: Buffer[] = [];
        socket.on('data', (c: Buffer) => chunks.push(c));
        socket.on('error', reject);
        socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
        socket.write(
          `GET ${PUBLIC}/front-page HTTP/1.1\r\n${hosts}If-None-Match: ${etag}\r\nConnection: close\r\n\r\n`,
        );
      });
    try {
      expect(await raw(`Host: ${HOST}\r\n`)).toMatch(/^HTTP\/1\.1 304 /);
      expect(await raw(`Host: ${HOST}\r\nHost: nobody.localhost\r\n`)).toMatch(/^HTTP\/1\.1 599 /);
      expect(await raw(`Host: ${HOST}\r\nhost: ${HOST}\r\n`)).toMatch(/^HTTP\/1\.1 599 /);
    } finally {
      server.close();
    }
  });

  it('logs each answer as `request completed` at level info, where fastify logs every request, and nothing above it', async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write: (chunk, _encoding, done) => {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    });
    for (const level of ['info', 'warn']) {
      lines.length = 0;
      const { server, port } = await doorOnly({ logger: pino({ level }, sink) as FastifyBaseLogger });
      try {
        expect((await send(port, `${PUBLIC}/front-page`, { host: HOST, 'if-none-match': etag })).status).toBe(304);
      } finally {
        server.close();
      }
      if (level === 'info') {
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatchObject({
          msg: 'request completed',
          req: { method: 'GET', url: `${PUBLIC}/front-page`, host: HOST },
          res: { statusCode: 304 },
        });
      } else {
        expect(lines).toEqual([]);
      }
    }
  });
});
