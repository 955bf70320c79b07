import type { AddressInfo } from 'node:net';
import { request as httpRequest, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, createCustomer, signInAs, type TestApp } from '../helpers/app.ts';
import { frontDoorServer } from '../../framework/http/web.ts';
import type { NoTxRouteDefinition } from '../../framework/entity/define.ts';

// The front door sits in the server fastify is given through its documented serverFactory: the
// door sees each request first, and what it does not answer reaches fastify's handler unchanged.
const HOST = 'factory.localhost';
const ARTICLES = '/api/v1/testkit/articles';
const PUBLIC = '/api/v1/testkit/public';

let app: TestApp;
let etag: string;

beforeAll(async () => {
  app = await startTestApp();
  const tenant = await createCustomer(app, 'factory', HOST);
  const { cookie } = await signInAs(app, tenant, ['article:read', 'article:write']);
  const created = await app
    .http(HOST)
    .post(ARTICLES)
    .set('Cookie', cookie)
    .send({ slug: 'door', title: 'Door', body: 'Body' });
  expect(created.status).toBe(201);
  expect(
    (await app.http(HOST).post(`${ARTICLES}/${created.body.id}/publish`).set('Cookie', cookie).send({})).status,
  ).toBe(200);
  // The article's own writes notify every process on commit, and a notification landing after the
  // read drops what that read stored in the validator cache (as it should): the read is repeated
  // until the route's early answer (what the door asks) knows the ETag.
  const route = app.services.routes.find((r) => r.route.method === 'GET' && r.route.url === `${PUBLIC}/:slug`)!
    .route as NoTxRouteDefinition;
  const early = () =>
    route.earlyAnswer?.(
      { method: 'GET', headers: { 'if-none-match': etag }, params: { slug: 'door' }, tenant },
      app.services,
    )?.status;
  await vi.waitFor(
    async () => {
      etag = (await app.http(HOST).get(`${PUBLIC}/door`)).headers.etag!;
      expect(early()).toBe(304);
    },
    { timeout: 10_000, interval: 100 },
  );
  expect(etag).toMatch(/^W\//);
});
afterAll(async () => {
  await app?.close();
});

const send = (port: number, path: string, headers: Record<string, string>): Promise<number> =>
  new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.end();
  });

describe('the server made by serverFactory', () => {
  it("answers the early 304 itself and hands every other request to fastify, with fastify's server settings", async () => {
    const factory = frontDoorServer(app.services, undefined, () => false)!;
    expect(factory).toBeTypeOf('function');
    let handled = 0;
    const options = {
      http: { requireHostHeader: false },
      keepAliveTimeout: 4321,
      requestTimeout: 0,
      connectionTimeout: 0,
      maxRequestsPerSocket: 0,
    };
    const server = factory((_req, res) => {
      handled += 1;
      res.writeHead(599);
      res.end();
    }, options as never) as Server;
    expect(server.keepAliveTimeout).toBe(4321);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      expect(await send(port, `${PUBLIC}/door`, { host: HOST, 'if-none-match': etag })).toBe(304);
      expect(handled).toBe(0);
      expect(await send(port, `${PUBLIC}/door`, { host: HOST })).toBe(599);
      expect(await send(port, `${PUBLIC}/door`, { host: HOST, 'if-none-match': 'W/"stale"' })).toBe(599);
      expect(handled).toBe(2);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("is the server the app listens on: its 304 is the door's", async () => {
    expect(app.web!.server.keepAliveTimeout).toBe(app.web!.initialConfig.keepAliveTimeout);
    const res = await app.http(HOST).get(`${PUBLIC}/door`).set('If-None-Match', etag);
    expect(res.status).toBe(304);
  });
});
