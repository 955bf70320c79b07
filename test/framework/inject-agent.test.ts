import supertest from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { signInAs, type SignedIn } from '../helpers/app.ts';
import type { AgentResponse, HttpRequest } from '../helpers/inject-agent.ts';
import { useTestApp } from '../helpers/use-test-app.ts';

/**
 * TestApp.http() sends through fastify's inject (test/helpers/inject-agent.ts): no port is bound,
 * and a recorded set of requests answers the same as supertest over a socket answers it.
 */
const t = useTestApp({ customers: ['acme'] });
let reader: SignedIn;
beforeAll(async () => {
  reader = await signInAs(t.app, t.acme, ['widget:read', 'widget:write']);
});

type Build = (http: {
  get(u: string): HttpRequest;
  post(u: string): HttpRequest;
  head(u: string): HttpRequest;
  patch(u: string): HttpRequest;
  delete(u: string): HttpRequest;
  options(u: string): HttpRequest;
}) => HttpRequest;

/** Each request, as a test would write it against t.app.http(host). */
const recorded: [string, string, Build][] = [
  ['a probe', 'operator.localhost', (h) => h.get('/health')],
  ['JSON', 'acme.localhost', (h) => h.get('/api/v1/auth/me').set('Cookie', reader.cookie)],
  ['a problem', 'acme.localhost', (h) => h.get('/api/v1/auth/me')],
  ['an unknown route', 'acme.localhost', (h) => h.get('/api/v1/nowhere')],
  ['NO_SITE', 'nosuch.localhost', (h) => h.get('/api/v1/auth/me')],
  ['HEAD', 'acme.localhost', (h) => h.head('/api/v1/auth/me').set('Cookie', reader.cookie)],
  [
    'a query object',
    'acme.localhost',
    (h) => h.get('/api/v1/testkit/widgets').set('Cookie', reader.cookie).query({ limit: 1, q: 'a b&c' }),
  ],
  [
    'a query string',
    'acme.localhost',
    (h) => h.get('/api/v1/testkit/widgets?limit=1').set('Cookie', reader.cookie).query('q=x'),
  ],
  [
    'a refused JSON body',
    'acme.localhost',
    (h) => h.post('/api/v1/testkit/widgets').set('Cookie', reader.cookie).send({ size: 'huge' }),
  ],
  [
    'a string body (form-encoded)',
    'acme.localhost',
    (h) => h.post('/api/v1/testkit/widgets').set('Cookie', reader.cookie).send('name=x'),
  ],
  [
    'a typed JSON string',
    'acme.localhost',
    (h) => h.post('/api/v1/testkit/widgets').set('Cookie', reader.cookie).type('json').send('{"name":'),
  ],
  [
    'a form',
    'acme.localhost',
    (h) => h.post('/api/v1/auth/login').type('form').send({ email: 'nobody@acme.test', password: 'x' }),
  ],
  [
    'PATCH of an unknown id',
    'acme.localhost',
    (h) =>
      h
        .patch('/api/v1/testkit/widgets/00000000-0000-7000-8000-000000000000')
        .set('Cookie', reader.cookie)
        .send({ name: 'y' }),
  ],
  [
    'DELETE of a malformed id',
    'acme.localhost',
    (h) => h.delete('/api/v1/testkit/widgets/nope').set('Cookie', reader.cookie),
  ],
  [
    'a CORS preflight',
    'acme.localhost',
    (h) =>
      h
        .options('/api/v1/testkit/widgets')
        .set('Origin', 'https://app.acme.test')
        .set('Access-Control-Request-Method', 'POST'),
  ],
  ['an HTML page', 'acme.localhost', (h) => h.get('/admin').set('Cookie', reader.cookie)],
  ['the OpenAPI document', 'operator.localhost', (h) => h.get('/api/v1/openapi.json')],
];

/** What a test reads of an answer; the request id (new for every request) and the socket's own headers left out. */
function comparable(res: AgentResponse | supertest.Response) {
  const headers = { ...res.headers } as Record<string, unknown>;
  const id = String(headers['x-request-id']);
  for (const name of ['x-request-id', 'date', 'connection', 'keep-alive', 'transfer-encoding']) delete headers[name];
  const scrub = (value: unknown) => JSON.parse(JSON.stringify(value ?? null).replaceAll(id, '<request id>'));
  return {
    method: res.request.method,
    status: res.status,
    ok: res.ok,
    redirect: res.redirect,
    type: res.type,
    charset: res.charset,
    headers,
    text: scrub(res.text),
    body: scrub(res.body),
  };
}

describe('the test app’s HTTP client', () => {
  it('binds no port', async () => {
    let listened = 0;
    t.app.web!.server.on('listening', () => listened++);
    for (const [, host, build] of recorded) await build(t.app.http(host));
    expect(listened).toBe(0);
    expect(t.app.web!.server.listening).toBe(false);
    // supertest over a socket does: the count above can see it.
    await supertest(t.app.web!.server).get('/health');
    expect(listened).toBe(1);
  });

  it.each(recorded)('answers %s as supertest over a socket does', async (_name, host, build) => {
    const wire = supertest(t.app.web!.server);
    const overWire = await build({
      get: (u) => wire.get(u).set('Host', host),
      post: (u) => wire.post(u).set('Host', host),
      head: (u) => wire.head(u).set('Host', host),
      patch: (u) => wire.patch(u).set('Host', host),
      delete: (u) => wire.delete(u).set('Host', host),
      options: (u) => wire.options(u).set('Host', host),
    });
    const injected = await build(t.app.http(host));
    expect(comparable(injected)).toEqual(comparable(overWire));
  });

  it('hands Set-Cookie over as a list, as Node’s client does, even for one cookie', async () => {
    const cookieNames = (res: { headers: Record<string, unknown> }) =>
      (res.headers['set-cookie'] as string[]).map((c) => c.split('=', 1)[0]);
    const injected = await t.app.http('acme.localhost').get('/admin/login');
    const overWire = await supertest(t.app.web!.server).get('/admin/login').set('Host', 'acme.localhost');
    expect(Array.isArray(injected.headers['set-cookie'])).toBe(true);
    expect(cookieNames(injected)).toEqual(cookieNames(overWire));
    expect(cookieNames(injected).length).toBeGreaterThan(0);
  });

  it('expect(status) refuses another status as supertest does', async () => {
    await expect(t.app.http('acme.localhost').get('/api/v1/auth/me').expect(200)).rejects.toThrow(
      'expected 200 "OK", got 401 "Unauthorized"',
    );
  });

  it('a call it cannot carry (buffer, redirects, …) sends that request over a socket, the calls before it included', async () => {
    const res = await t.app
      .http('acme.localhost')
      .get('/api/v1/auth/me')
      .set('Cookie', reader.cookie)
      .buffer(true)
      .redirects(0);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ email: reader.email });
  });
});
