import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, createCustomer, signInAs, type TestApp } from '../helpers/app.ts';
import { frontDoor } from '../../framework/http/front-door.ts';

/**
 * The front door (framework/http/front-door.ts) stays only while its answers are fastify's: the
 * same recorded requests go to the app's own server, where the door sees each request first, and
 * to a server that hands every request straight to fastify (its documented `routing` handler, the
 * one the door falls back to), and every status, header and body must be the same. Only what
 * differs by nature from one answer to the next is left out: the date and the request id (a new
 * one per request on either side), in the headers and in a problem document.
 */
const HOST = 'differential.localhost';
const ARTICLES = '/api/v1/testkit/articles';
const PUBLIC = '/api/v1/testkit/public';
const CONTENTS = '/api/v1/content/contents';
const VOLATILE = new Set(['date', 'x-request-id']);

let app: TestApp;
let withDoor: number;
let withoutDoor: number;
let doorAlone: number;
let plain: Server;
let door: Server;
let articleTag: string;
let pageTag: string;

async function published(url: string, cookie: string, body: Record<string, unknown>): Promise<void> {
  const created = await app.http(HOST).post(url).set('Cookie', cookie).send(body);
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const publish = await app.http(HOST).post(`${url}/${created.body.id}/publish`).set('Cookie', cookie).send({});
  expect(publish.status, JSON.stringify(publish.body)).toBe(200);
}

beforeAll(async () => {
  app = await startTestApp();
  const tenant = await createCustomer(app, 'differential', HOST);
  const { cookie } = await signInAs(app, tenant, ['article:read', 'article:write', 'content:manage']);
  await published(ARTICLES, cookie, { slug: 'front-page', title: 'Front page', body: 'Body' });
  await published(CONTENTS, cookie, { slug: 'welcome', title: 'Welcome', kind: 'page', body: '# Hello' });
  await app.web!.listen({ host: '127.0.0.1', port: 0 });
  withDoor = (app.web!.server.address() as AddressInfo).port;
  // The same app with nothing in front of fastify: its server made as fastify makes one itself.
  plain = createServer({ requireHostHeader: false }, (req, res) => app.web!.routing(req, res));
  plain.keepAliveTimeout = app.web!.server.keepAliveTimeout;
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
  withoutDoor = (plain.address() as AddressInfo).port;
  // And the door with nothing behind it, which tells which requests it answers itself (599: none).
  const answer = frontDoor(
    app.services.routes.map(({ route }) => route),
    app.services,
    undefined,
    () => false,
  )!;
  door = createServer({ requireHostHeader: false }, (req, res) => {
    if (answer(req, res)) return;
    res.writeHead(599);
    res.end();
  });
  await new Promise<void>((resolve) => door.listen(0, '127.0.0.1', resolve));
  doorAlone = (door.address() as AddressInfo).port;
  // Full reads fill the validator cache, as in production; their ETags are what clients send back.
  articleTag = (await send(withoutDoor, { method: 'GET', path: `${PUBLIC}/front-page`, headers: { host: HOST } }))
    .headers.etag as string;
  pageTag = (await send(withoutDoor, { method: 'GET', path: '/p/welcome', headers: { host: HOST } })).headers
    .etag as string;
  expect(articleTag).toMatch(/^W\//);
  expect(pageTag).toMatch(/^W\//);
});
afterAll(async () => {
  await new Promise((resolve) => plain?.close(resolve));
  await new Promise((resolve) => door?.close(resolve));
  await app?.close();
});

interface Recorded {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** The door answers it itself (else it leaves it to fastify). */
  door?: true;
}
interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

function send(port: number, { method, path, headers }: Recorded): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      // No Host of its own: each recorded request says which host it asks, or none.
      { host: '127.0.0.1', port, method, path, headers, agent: false, setHost: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * The answer without what differs by nature: the date, the request id, and the request id a
 * problem document repeats (checked to be the answer's own, then left out).
 */
function comparable({ status, headers, body }: Answer) {
  let stable = body;
  // A HEAD's problem comes without its body.
  if (String(headers['content-type']).startsWith('application/problem+json') && body !== '') {
    const { requestId, ...problem } = JSON.parse(body) as { requestId?: string };
    expect(requestId).toBe(headers['x-request-id']);
    stable = JSON.stringify(problem);
  }
  return {
    status,
    headers: Object.fromEntries(Object.entries(headers).filter(([name]) => !VOLATILE.has(name))),
    body: stable,
  };
}

/** The recorded set: what the door answers itself, what it must leave alone, and its neighbours. */
function recorded(): Recorded[] {
  const at = (headers: Record<string, string> = {}) => ({ host: HOST, ...headers });
  const current = at({ 'if-none-match': articleTag });
  const currentPage = at({ 'if-none-match': pageTag });
  const article = `${PUBLIC}/front-page`;
  return [
    // 304s the door answers: GET and HEAD, a slug in another case (normalised as the handler does),
    // an If-None-Match listing several tags or the wildcard, the host in capitals with a port, and
    // the HTML page's.
    { method: 'GET', path: article, headers: current, door: true },
    { method: 'HEAD', path: article, headers: current, door: true },
    { method: 'GET', path: `${PUBLIC}/Front-Page`, headers: current, door: true },
    { method: 'GET', path: article, headers: at({ 'if-none-match': `W/"other", ${articleTag}` }), door: true },
    { method: 'GET', path: article, headers: at({ 'if-none-match': '*' }), door: true },
    {
      method: 'GET',
      path: article,
      headers: { host: `${HOST.toUpperCase()}:80`, 'if-none-match': articleTag },
      door: true,
    },
    { method: 'GET', path: '/p/welcome', headers: currentPage, door: true },
    { method: 'HEAD', path: '/p/welcome', headers: currentPage, door: true },
    // 304s the door leaves to the router: percent-encoded, a trailing slash, a query string.
    { method: 'GET', path: `${PUBLIC}/front-pag%65`, headers: current },
    { method: 'GET', path: `${article}/`, headers: current },
    { method: 'GET', path: `${article}?x=1`, headers: current },
    // Full answers: no If-None-Match, a stale one; HEAD without one.
    { method: 'GET', path: article, headers: at() },
    { method: 'GET', path: article, headers: at({ 'if-none-match': 'W/"stale"' }) },
    { method: 'HEAD', path: article, headers: at() },
    { method: 'GET', path: '/p/welcome', headers: at() },
    // 404s: an unknown slug, one the parameter's grammar refuses (422), an over-long segment, an
    // unknown path, the page of an unknown slug.
    { method: 'GET', path: `${PUBLIC}/no-such-page`, headers: current },
    { method: 'GET', path: `${PUBLIC}/not_a_slug`, headers: current },
    { method: 'GET', path: `${PUBLIC}/${'a'.repeat(101)}`, headers: current },
    { method: 'GET', path: '/api/v1/testkit/nowhere', headers: current },
    { method: 'GET', path: '/p/nobody-wrote-this', headers: currentPage },
    // NO_SITE: an unknown host, a subdomain of a known one, no Host at all; the page hides it (404).
    { method: 'GET', path: article, headers: { host: 'nobody.localhost', 'if-none-match': articleTag } },
    { method: 'HEAD', path: article, headers: { host: `sub.${HOST}`, 'if-none-match': articleTag } },
    { method: 'GET', path: article, headers: { 'if-none-match': articleTag } },
    { method: 'GET', path: '/p/welcome', headers: { host: 'nobody.localhost', 'if-none-match': pageTag } },
    // Methods the route does not take, and one no route takes.
    { method: 'POST', path: article, headers: current },
    { method: 'PUT', path: article, headers: current },
    { method: 'DELETE', path: article, headers: current },
    { method: 'PATCH', path: '/p/welcome', headers: currentPage },
    { method: 'PROPFIND', path: article, headers: current },
    // The probes, which no tenant answers.
    { method: 'GET', path: '/health', headers: at() },
  ];
}

describe('the front door answers as fastify does', () => {
  it('gives every recorded request the same status, headers and body with and without it', async () => {
    const seen = new Set<string>();
    for (const request of recorded()) {
      const label = `${request.method} ${request.path} ${JSON.stringify(request.headers)}`;
      const router = comparable(await send(withoutDoor, request));
      expect(comparable(await send(withDoor, request)), label).toEqual(router);
      // The door alone answers exactly the requests marked as its own, and answers them as fastify does.
      const alone = await send(doorAlone, request);
      expect(alone.status !== 599, label).toBe(request.door === true);
      if (request.door) expect(comparable(alone), label).toEqual(router);
      seen.add(`${request.method} ${router.status}`);
      const code = router.body.startsWith('{') ? (JSON.parse(router.body) as { code?: string }).code : undefined;
      if (code) seen.add(code);
    }
    // The set holds 304s, full answers, 404s, NO_SITE and methods the route does not take, for GET and HEAD.
    for (const expected of [
      'GET 304',
      'HEAD 304',
      'GET 200',
      'HEAD 200',
      'GET 404',
      'HEAD 404',
      'NO_SITE',
      'ROUTE_NOT_FOUND',
      'NOT_FOUND',
      'METHOD_NOT_ALLOWED',
    ])
      expect(seen, expected).toContain(expected);
  });
});
