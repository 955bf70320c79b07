import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { safeNextPath } from '../../../framework/access/next-path.ts';
import { addUser, sessionCookieOf } from './fixtures.ts';

/**
 * Issue 27, point 2: a form sign-in whose `next` holds a character outside ASCII answered 500
 * (fastify's ERR_INVALID_CHAR for a character above U+00FF in Location; é went out as a raw
 * Latin-1 byte). The redirect target is percent-encoded, and stays a local path.
 */
let app: TestApp;
let acme: TenantRef;
let person: { id: string; email: string; password: string };
const HOST = 'next-encoding.localhost';

beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'next-encoding', HOST);
  person = await addUser(app, acme, { roles: ['admin'], password: 'a long enough password' });
});
afterAll(async () => {
  await app?.close();
});

/** The sign-in page's form token and the cookie it set, as a browser holds them. */
async function formToken(): Promise<{ cookie: string; field: string }> {
  const page = await app.http(HOST).get('/admin/login');
  expect(page.status).toBe(200);
  const field = /name="csrf" value="([^"]+)"/.exec(page.text)?.[1];
  const setCookie = ([] as string[]).concat(page.headers['set-cookie'] ?? []);
  const cookie = setCookie.map((c) => c.split(';', 1)[0]!).join('; ');
  expect(field).toBeTruthy();
  return { cookie, field: field! };
}

async function signInWithNext(rawQuery: string) {
  const { cookie, field } = await formToken();
  return app
    .http(HOST)
    .post(`/api/v1/auth/login?next=${rawQuery}`)
    .set('Cookie', cookie)
    .type('form')
    .send({ csrf: field, email: person.email, password: person.password });
}

describe('form sign-in: next is percent-encoded into Location', () => {
  it('next=/€ (sent as %2F%E2%82%AC) signs in and lands on /%E2%82%AC', async () => {
    const res = await signInWithNext('%2F%E2%82%AC');
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/%E2%82%AC');
    expect(sessionCookieOf(res)).toBeTruthy();
  });

  it('next=/é lands on /%C3%A9, not a raw Latin-1 byte', async () => {
    const res = await signInWithNext(encodeURIComponent('/é'));
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/%C3%A9');
    expect(sessionCookieOf(res)).toBeTruthy();
  });

  it('keeps a path, its query and its escapes as they are; encodes spaces, quotes and an astral character', async () => {
    const res = await signInWithNext(encodeURIComponent('/admin/content/contents?sort=-title&q=a b"😀'));
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/admin/content/contents?sort=-title&q=a%20b%22%F0%9F%98%80');
  });
});

describe('safeNextPath', () => {
  it('answers ASCII only, a local path, and is idempotent', () => {
    for (const [given, expected] of [
      ['/€', '/%E2%82%AC'],
      ['/%E2%82%AC', '/%E2%82%AC'],
      ['/é', '/%C3%A9'],
      ['/a b', '/a%20b'],
      ['/100%', '/100%25'],
      ['/50%zz', '/50%25zz'],
      ['/%2525', '/%2525'],
      ['/admin/task/tasks?sort=title#top', '/admin/task/tasks?sort=title#top'],
      ['/<script>', '/%3Cscript%3E'],
    ] as const) {
      const once = safeNextPath(given);
      expect(once, given).toBe(expected);
      expect(safeNextPath(once), given).toBe(once);
      expect(once).toMatch(/^\/[\x21-\x7e]*$/);
    }
  });

  it('still refuses what is not a local path, and a string with no encoding', () => {
    for (const unsafe of [
      '//evil.example',
      '/\\evil.example',
      'https://evil.example',
      '/ok\u0001x',
      '/\ud800',
      '',
      'evil',
      undefined,
      3,
    ]) {
      expect(safeNextPath(unsafe), JSON.stringify(unsafe)).toBe('/admin');
    }
  });
});
