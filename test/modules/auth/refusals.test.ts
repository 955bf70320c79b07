import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';

let app: TestApp;
let cookie: string;
beforeAll(async () => {
  app = await startTestApp();
  const acme = await createCustomer(app, 'acme');
  cookie = (await signInAs(app, acme, ['role:manage'])).cookie;
});
afterAll(async () => {
  await app?.close();
});

const bodyRoutes: [string, string][] = [
  ['post', '/api/v1/auth/login'],
  ['post', '/api/v1/auth/password'],
  ['post', '/api/v1/auth/password/forgot'],
  ['post', '/api/v1/auth/password/reset'],
  ['put', '/api/v1/auth/roles/editor'],
];

function send(method: string, url: string) {
  const http = app.http('acme.localhost');
  const req = method === 'put' ? http.put(url) : http.post(url);
  return req.set('Cookie', cookie);
}

describe('refusals of the sign-in routes', () => {
  it('answers malformed JSON with 400, another media type with 415 and unknown fields with 422, all as problem+json without internals', async () => {
    for (const [method, url] of bodyRoutes) {
      const malformed = await send(method, url).set('Content-Type', 'application/json').send('{"email": ');
      expect(malformed.status, url).toBe(400);
      expect(malformed.body.code).toBe('MALFORMED_REQUEST');
      const media = await send(method, url).set('Content-Type', 'application/xml').send('<email/>');
      expect(media.status, url).toBe(415);
      const unknown = await send(method, url).send({ surprise: true });
      expect(unknown.status, url).toBe(422);
      expect(unknown.body.code).toBe('VALIDATION_FAILED');
      for (const res of [malformed, media, unknown]) {
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(JSON.stringify(res.body)).not.toMatch(/at .*\.ts:\d+|stack|select |insert /i);
      }
    }
  });

  it('answers an unknown host with 404 NO_SITE before anything else', async () => {
    for (const [method, url] of [
      ...bodyRoutes,
      ['get', '/api/v1/auth/me'],
      ['get', '/api/v1/auth/roles'],
      ['post', '/api/v1/auth/logout'],
    ] as [string, string][]) {
      const http = app.http('nowhere.localhost');
      const res = await (method === 'get' ? http.get(url) : method === 'put' ? http.put(url) : http.post(url)).send({});
      expect(res.status, url).toBe(404);
      expect(res.body.code).toBe('NO_SITE');
    }
  });
});
