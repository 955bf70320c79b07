import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

// The shell's static files are linked with their content's hash (`?v=`) and kept by the browser
// under that URL, so a page's navigation to the next asks for none of them; the stable path, or
// another version (a page rendered before a deploy), is revalidated as before (docs/admin.md,
// "How the shell's files are cached").

const HOST = 'acme.localhost';
const FILES = ['admin.css', 'htmx.min.js', 'favicon.svg', 'live.js', 'page-tools.js'].map((f) => `/admin/_assets/${f}`);
const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATED = 'public, no-cache';

let app: TestApp;
let acme: TenantRef;
let admin: SignedIn;
/** Each file's current version, from the content its stable path serves now. */
const version = new Map<string, string>();

beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'acme', HOST);
  admin = await signInAs(app, acme, ['*']);
  for (const path of FILES) {
    const res = await app.http(HOST).get(path).buffer(true);
    expect(res.status, path).toBe(200);
    const body = Buffer.isBuffer(res.body) && res.body.length > 0 ? res.body : Buffer.from(res.text);
    version.set(path, createHash('sha256').update(body).digest('base64url').slice(0, 16));
  }
});
afterAll(async () => {
  await app?.close();
});

/** Every link and script source of a page that points into the shell's asset folder. */
const assetLinks = (html: string) => [...html.matchAll(/(?:href|src)="(\/admin\/_assets\/[^"]*)"/g)].map((m) => m[1]!);

describe("the shell's files are linked by their content's hash, and that URL is kept by the browser", () => {
  it("every page's links to the shell's files carry the file's current hash", async () => {
    const signedIn = (path: string) => app.http(HOST).get(path).set('Cookie', admin.cookie);
    const dashboard = await signedIn('/admin');
    const sidebar = [...dashboard.text.matchAll(/<li><a (?:class="locked" )?href="(\/admin[^"]*)"/g)].map((m) => m[1]!);
    expect(sidebar.length).toBeGreaterThan(5);
    const pages = [
      ['the sign-in page', await app.http(HOST).get('/admin/login')],
      ['the dashboard', dashboard],
      ['an unknown path', await signedIn('/admin/no/such/page')],
      ...(await Promise.all(sidebar.map(async (path) => [path, await signedIn(path)] as const))),
    ] as const;
    const linked = new Set<string>();
    for (const [what, res] of pages) {
      const links = assetLinks(res.text);
      // Style sheet, htmx and icon on every page; live.js when signed in; page-tools.js on the files page.
      expect(links.length, what).toBeGreaterThanOrEqual(3);
      for (const link of links) {
        const [path, query] = link.split('?') as [string, string | undefined];
        expect(version.has(path), `${what}: ${link}`).toBe(true);
        expect(query, `${what}: ${link}`).toBe(`v=${version.get(path)}`);
        linked.add(path);
      }
    }
    expect([...linked].sort()).toEqual([...FILES].sort());
  });

  it('the hashed URL answers immutable, a year, with the ETag (a 304 on a match, immutable too)', async () => {
    for (const path of FILES) {
      const res = await app.http(HOST).get(`${path}?v=${version.get(path)}`);
      expect(res.status, path).toBe(200);
      expect(res.headers['cache-control'], path).toBe(IMMUTABLE);
      expect(res.headers.etag, path).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
      const again = await app
        .http(HOST)
        .get(`${path}?v=${version.get(path)}`)
        .set('If-None-Match', res.headers.etag!);
      expect(again.status, path).toBe(304);
      expect(again.headers['cache-control'], path).toBe(IMMUTABLE);
    }
  });

  it('the stable path, another version, or v twice answer no-cache with the ETag: revalidated as before', async () => {
    for (const path of FILES) {
      const current = version.get(path)!;
      const stale = `${current.slice(0, -1)}${current.endsWith('A') ? 'B' : 'A'}`;
      for (const url of [path, `${path}?v=${stale}`, `${path}?v=`, `${path}?v=${current}&v=${current}`]) {
        const res = await app.http(HOST).get(url);
        expect(res.status, url).toBe(200);
        expect(res.headers['cache-control'], url).toBe(REVALIDATED);
        const again = await app.http(HOST).get(url).set('If-None-Match', res.headers.etag!);
        expect(again.status, url).toBe(304);
        expect(again.headers['cache-control'], url).toBe(REVALIDATED);
      }
    }
  });
});
