import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { createCustomer } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import { addUser, sessionCookieOf } from '../modules/auth/fixtures.ts';
import {
  hasChromium,
  seriousViolations,
  signInThroughLogin,
  useBrowserApp,
  warnNoChromium,
} from './admin-pages-setup.ts';
import { sideways, WIDTHS } from './shell-sample.ts';

// The tenant's web origins (GET/PUT /api/v1/auth/cors-origins, cors:manage) in the admin shell: a
// "Web origins" page, reached from the sidebar by whoever holds cors:manage, lists the origins
// and sets the whole list from a text area, one origin a line, by the PUT route's own handler: the
// API then answers the same list. A line that is no origin comes back on the form with a sentence
// naming it (never a code), and nothing is stored; the installation's own origins are shown,
// read-only. Without JavaScript too; no sideways scroll at 390 px; no serious axe finding.

warnNoChromium('test/browser/admin-cors-origins.test.ts');

const INSTALLED = 'https://status.example.net';
const t = useBrowserApp({ config: testConfig({ server: { cors_origins: INSTALLED } }) });
const HOST = 'acme.localhost';
let acme: TenantRef;
let admin: { email: string; password: string };
let member: { email: string; password: string };

beforeAll(async () => {
  if (!hasChromium) return;
  acme = await createCustomer(t.app, 'acme', HOST);
  admin = await addUser(t.app, acme, { roles: ['admin'], password: 'acme admin password' });
  // Signs in, holds no permission: no cors:manage.
  member = await addUser(t.app, acme, { roles: [], password: 'acme member password' });
}, 60_000);

/** What the API answers for the tenant's origins now. */
async function apiOrigins(): Promise<string[]> {
  const login = await t.app
    .http(HOST)
    .post('/api/v1/auth/login')
    .send({ email: admin.email, password: admin.password })
    .expect(200);
  const res = await t.app
    .http(HOST)
    .get('/api/v1/auth/cors-origins')
    .set('Cookie', sessionCookieOf(login)!)
    .expect(200);
  return res.body.origins;
}

const listed = (page: Page) => page.locator('[data-origins] li').allTextContents();

/** Posts the form with this text and waits for the page that answers (the list again, or the form refused); its status. */
async function save(page: Page, text: string): Promise<number> {
  await page.fill('textarea[name=origins]', text);
  // A form post is a navigation (to the same address either way): the wait ends on the page after.
  const [answer] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST'),
    page.waitForEvent('framenavigated', (frame) => frame === page.mainFrame()),
    page.getByRole('button', { name: 'Save origins' }).click(),
  ]);
  await page.waitForLoadState('load');
  return answer.status();
}

describe.skipIf(!hasChromium)('the Web origins page', () => {
  it.each(WIDTHS)(
    'opens from the sidebar, saves the list as the API stores it, and clears it ($name)',
    async (size) => {
      const { context, page } = await signInThroughLogin(t.browser, t.origin(HOST), admin);
      try {
        await page.setViewportSize(size);
        const nav = page.locator('nav[aria-label="Main"]');
        if (size.width < 700) await nav.locator('summary').click();
        await Promise.all([
          page.waitForURL(/\/admin\/auth\/cors-origins$/),
          nav.getByRole('link', { name: 'Web origins' }).click(),
        ]);
        expect(await page.locator('main h1').textContent()).toBe('Web origins');
        expect(await page.locator('[data-origins]').textContent()).toContain('None');
        // The installation's origin is named, and is no part of the tenant's list.
        expect(await page.locator('[data-installation-origins]').textContent()).toContain(INSTALLED);
        expect(await seriousViolations(page)).toEqual([]);

        // Stored as a browser sends an origin: lower-case, no default port, no trailing slash, once, sorted.
        expect(await save(page, 'https://App.Example.com:443/\n\nhttp://localhost:5173, https://app.example.com')).toBe(
          303,
        );
        expect(new URL(page.url()).pathname).toBe('/admin/auth/cors-origins');
        expect(await page.getByRole('status').first().textContent()).toContain('Web origins saved.');
        expect(await listed(page)).toEqual(['http://localhost:5173', 'https://app.example.com']);
        expect(await page.inputValue('textarea[name=origins]')).toBe('http://localhost:5173\nhttps://app.example.com');
        expect(await apiOrigins()).toEqual(['http://localhost:5173', 'https://app.example.com']);
        expect(await sideways(page)).toBe(0);
        expect(await seriousViolations(page)).toEqual([]);

        await save(page, '');
        expect(await listed(page)).toEqual([]);
        expect(await apiOrigins()).toEqual([]);
      } finally {
        await context.close();
      }
    },
  );

  it.each([true, false])(
    'refuses a line that is no origin with a sentence naming it, and stores nothing (JavaScript: %s)',
    async (javaScriptEnabled) => {
      const { context, page } = await signInThroughLogin(t.browser, t.origin(HOST), admin, { javaScriptEnabled });
      try {
        await page.goto(`${t.origin(HOST)}/admin/auth/cors-origins`);
        await save(page, 'https://app.example.com');
        expect(await listed(page)).toEqual(['https://app.example.com']);

        const posted = 'https://ok.example.com\nhttps://app.example.com/callback';
        expect(await save(page, posted)).toBe(422);
        expect(await page.getByRole('alert').first().textContent()).toContain('The web origins were not saved.');
        const error = await page.locator('#cors-origins-error').textContent();
        expect(error).toContain('“https://app.example.com/callback” is not an origin.');
        expect(error).toContain('no path');
        // Words for people, not the problem's code.
        expect(await page.locator('main').textContent()).not.toContain('VALIDATION_FAILED');
        expect(await page.getAttribute('textarea[name=origins]', 'aria-invalid')).toBe('true');
        // The form keeps what was posted; the list and the API keep what was stored.
        expect(await page.inputValue('textarea[name=origins]')).toBe(posted);
        expect(await listed(page)).toEqual(['https://app.example.com']);
        expect(await apiOrigins()).toEqual(['https://app.example.com']);

        // More than the API takes: the limit said in words.
        const many = Array.from({ length: 51 }, (_, i) => `https://app${i}.example.com`).join('\n');
        expect(await save(page, many)).toBe(422);
        expect(await page.locator('#cors-origins-error').textContent()).toBe(
          'List at most 50 origins; this list has 51.',
        );
        expect(await apiOrigins()).toEqual(['https://app.example.com']);
        // axe runs in the page: with JavaScript only.
        if (javaScriptEnabled) expect(await seriousViolations(page)).toEqual([]);
      } finally {
        await context.close();
      }
    },
  );

  it('is neither listed nor opened for a person without cors:manage', async () => {
    const { context, page } = await signInThroughLogin(t.browser, t.origin(HOST), member);
    try {
      expect(await page.locator('nav[aria-label="Main"] a', { hasText: 'Web origins' }).count()).toBe(0);
      const answer = await page.goto(`${t.origin(HOST)}/admin/auth/cors-origins`);
      expect(answer?.status()).toBe(403);
      expect(await page.locator('textarea[name=origins]').count()).toBe(0);
    } finally {
      await context.close();
    }
  });
});
