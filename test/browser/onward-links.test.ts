import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, startTestApp, type TestApp } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import { mintSetPasswordToken } from '../../modules/auth/set-password-tokens.ts';
import {
  hasChromium,
  closeContexts,
  workerChromium,
  listen,
  seriousViolations,
  signInThroughLogin,
  warnNoChromium,
} from './admin-pages-setup.ts';

// Issue 35, point 5 (onward links) and point 6: after setting a password, the way to sign in; on
// a published content's admin page, the way to its public page, which is itself accessible.

warnNoChromium('test/browser/onward-links.test.ts');

const HOST = 'onward.localhost';
let app: TestApp;
let browser: Browser;
let acme: TenantRef;
let origin: string;

beforeAll(async () => {
  if (!hasChromium) return;
  app = await startTestApp();
  acme = await createCustomer(app, 'onward', HOST);
  origin = (await listen(app))(HOST);
  browser = await workerChromium();
}, 60_000);
afterAll(async () => {
  if (browser) await closeContexts(browser);
  await app?.close();
});

describe.skipIf(!hasChromium)('after set-password: a link to sign in', () => {
  it('with JavaScript: the page says the password is set and links to the sign-in page, which then takes the new password', async () => {
    const person = await addUser(app, acme, { password: null, status: 'invited' });
    const token = await app.services.transactions.run(acme, (ctx) =>
      mintSetPasswordToken(ctx, person.id, 'invitation'),
    );
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);
      await page.goto(`${origin}/auth/reset?token=${encodeURIComponent(token)}`);
      expect(await page.getByRole('link', { name: 'Sign in' }).count()).toBe(0);
      await page.fill('#password', 'my brand new password');
      await page.click('button[type=submit]');
      const link = page.getByRole('link', { name: 'Sign in' });
      await link.waitFor({ state: 'visible' });
      expect(await page.locator('form').count()).toBe(0);
      expect(await seriousViolations(page)).toEqual([]);
      await Promise.all([page.waitForURL(`${origin}/admin/login`), link.click()]);
      await page.fill('input[name=email]', person.email);
      await page.fill('input[name=password]', 'my brand new password');
      await Promise.all([page.waitForURL(`${origin}/admin`), page.click('main form button[type=submit]')]);
    } finally {
      await context.close();
    }
  }, 60_000);

  it('without JavaScript: the form post lands on the same message and link (no page left blank)', async () => {
    const person = await addUser(app, acme, { password: 'before the reset' });
    const token = await app.services.transactions.run(acme, (ctx) => mintSetPasswordToken(ctx, person.id, 'reset'));
    const context = await browser.newContext({ javaScriptEnabled: false });
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);
      await page.goto(`${origin}/auth/reset?token=${encodeURIComponent(token)}`);
      await page.fill('#password', 'set without scripts');
      await Promise.all([page.waitForURL(`${origin}/auth/reset?done=1`), page.click('button[type=submit]')]);
      expect(await page.locator('#done').textContent()).toBe('Your password is set. Sign in with it.');
      expect(await page.getByRole('link', { name: 'Sign in' }).getAttribute('href')).toBe('/admin/login');
    } finally {
      await context.close();
    }
  }, 60_000);
});

describe.skipIf(!hasChromium)('a published content’s admin page links to its public page', () => {
  it('offers “View the public page” once published (not on a draft), and the page it opens is accessible HTML', async () => {
    const admin = await addUser(app, acme, { roles: ['admin'], password: 'admin password here' });
    const { context, page } = await signInThroughLogin(browser, origin, admin);
    page.setDefaultTimeout(15_000);
    try {
      const cookie = (await context.cookies(origin)).map((c) => `${c.name}=${c.value}`).join('; ');
      const created = await app
        .http(HOST)
        .post('/api/v1/content/contents')
        .set('Cookie', cookie)
        .send({ slug: 'about-us', title: 'About us', kind: 'page', body: '# About us\n\nWe make *things*.' });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      await page.goto(`${origin}/admin/content/contents/${created.body.id}`);
      expect(await page.getByRole('link', { name: 'View the public page' }).count()).toBe(0);

      expect(
        (
          await app
            .http(HOST)
            .post(`/api/v1/content/contents/${created.body.id}/publish`)
            .set('Cookie', cookie)
            .send({})
        ).status,
      ).toBe(200);
      await page.goto(`${origin}/admin/content/contents/${created.body.id}`);
      const link = page.getByRole('link', { name: 'View the public page' });
      expect(await link.getAttribute('href')).toBe('/p/about-us');
      await Promise.all([page.waitForURL(`${origin}/p/about-us`), link.click()]);
      expect(await page.locator('h1').first().textContent()).toBe('About us');
      expect(await page.locator('article em').textContent()).toBe('things');
      expect(await seriousViolations(page)).toEqual([]);

      await page.goto(`${origin}/p/no-such-page`);
      expect(await page.locator('h1').textContent()).toBe('Page not found');
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);
});
