import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR_HOST, createCustomer, startTestApp, type TestApp } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import {
  browserCookie,
  closeContexts,
  hasChromium,
  listen,
  signInThroughLogin,
  warnNoChromium,
  workerChromium,
} from './admin-pages-setup.ts';

warnNoChromium('test/browser/admin-pages.test.ts');

let app: TestApp;
let browser: Browser;
let acme: TenantRef;
let origin: (host: string) => string;
let acmeAdmin: { id: string; email: string; password: string };
let acmeSupport: { id: string; email: string; password: string };
let operatorAdmin: { id: string; email: string; password: string };

const ACME = 'acme.localhost';

describe.skipIf(!hasChromium)('admin fixed pages in Chromium', () => {
  beforeAll(async () => {
    app = await startTestApp();
    acme = await createCustomer(app, 'acme', ACME);
    const globex = await createCustomer(app, 'globex', 'globex.localhost');
    acmeAdmin = await addUser(app, acme, { roles: ['admin'], password: 'acme admin password' });
    operatorAdmin = await addUser(app, app.operator, { roles: ['admin'], password: 'operator password' });
    origin = await listen(app);
    const admin = await app
      .http(ACME)
      .post('/api/v1/auth/login')
      .send({ email: acmeAdmin.email, password: acmeAdmin.password });
    const cookie = admin.headers['set-cookie']![0]!.split(';', 1)[0]!;
    await app
      .http(ACME)
      .put('/api/v1/auth/roles/support')
      .set('Cookie', cookie)
      .send({ permissions: ['task:read'] })
      .expect(201);
    acmeSupport = await addUser(app, acme, { roles: ['support'], password: 'acme support password' });
    for (const title of ['First', 'Second']) {
      await app
        .http(ACME)
        .post('/api/v1/task/tasks')
        .set('Cookie', cookie)
        .send({ title, priority: 'low', deadline: '2099-01-01T00:00:00Z' })
        .expect(201);
    }
    // A suspended tenant is listed too, with its status and no way into its admin.
    const operatorLogin = await app
      .http()
      .post('/api/v1/auth/login')
      .send({ email: operatorAdmin.email, password: operatorAdmin.password });
    await app
      .http()
      .post(`/api/v1/tenant/tenants/${globex.id}/suspend`)
      .set('Cookie', operatorLogin.headers['set-cookie']![0]!.split(';', 1)[0]!)
      .expect(200);
    browser = await workerChromium();
  });
  afterAll(async () => {
    if (browser) await closeContexts(browser);
    await app?.close();
  });

  describe('GET /admin: a card per readable resource with the count its list reports', () => {
    it('shows an admin every readable resource and a support member only tasks, each with its list total', async () => {
      const cards = async (person: { email: string; password: string }) => {
        const { context, page } = await signInThroughLogin(browser, origin(ACME), person);
        try {
          const shown = await page.$$eval('[data-resource]', (els) =>
            els.map((el) => ({
              key: el.getAttribute('data-resource'),
              count: el.querySelector('[data-count]')?.getAttribute('data-count') ?? null,
            })),
          );
          const check = page.locator('[data-check=database]');
          const database = (await check.count()) ? await check.getAttribute('data-ok') : null;
          const catalog = await app
            .http(ACME)
            .get('/api/v1/admin/resources')
            .set('Cookie', await browserCookie(context, origin(ACME)));
          return { shown, database, catalog: catalog.body.resources.map((r: { key: string }) => r.key) };
        } finally {
          await context.close();
        }
      };
      const admin = await cards(acmeAdmin);
      expect(admin.shown.map((c) => c.key)).toEqual(admin.catalog);
      expect(admin.shown.map((c) => c.key)).toEqual(
        expect.arrayContaining(['task.task', 'content.content', 'user.user', 'billing.plan']),
      );
      expect(admin.shown.find((c) => c.key === 'task.task')?.count).toBe('2');
      // The database check is the operator's alone (issue 42, point 5): a customer learns nothing from it.
      expect(admin.database).toBeNull();

      const support = await cards(acmeSupport);
      expect(support.shown).toEqual([{ key: 'task.task', count: '2' }]);
      expect(support.catalog).toEqual(['task.task']);
    });
  });

  describe('GET /admin/health: the readiness checks one at a time, each loaded by htmx', () => {
    it('loads each check from its own fragment URL with an htmx request', async () => {
      const { context, page } = await signInThroughLogin(browser, origin(ACME), acmeAdmin);
      try {
        const fragment = page.waitForRequest((req) => new URL(req.url()).pathname === '/admin/health/database');
        const response = await page.goto(`${origin(ACME)}/admin/health`);
        // The page itself carries no verdict: the check runs only when its fragment is asked for.
        expect(await response!.text()).not.toContain('data-ok=');
        const request = await fragment;
        expect(request.headers()['hx-request']).toBe('true');
        await page.waitForSelector('[data-check=database][data-ok=true]');
        expect(await page.textContent('[data-check=database]')).toContain('passes');
      } finally {
        await context.close();
      }
    });

    it('without JavaScript, each check is a link to its fragment URL, which answers a whole page', async () => {
      const { context, page } = await signInThroughLogin(browser, origin(ACME), acmeAdmin, {
        javaScriptEnabled: false,
      });
      try {
        await page.goto(`${origin(ACME)}/admin/health`);
        await page.click('noscript a, a[href="/admin/health/database"]');
        expect(new URL(page.url()).pathname).toBe('/admin/health/database');
        expect(await page.getAttribute('[data-check=database]', 'data-ok')).toBe('true');
        // A whole page: the shell around it.
        expect(await page.locator('nav.sidebar').count()).toBe(1);
      } finally {
        await context.close();
      }
    });
  });

  describe('GET /admin/tenant/tenants: the operator’s tenant switcher', () => {
    it('lists every tenant with its status and hosts, linking to its primary host’s /admin', async () => {
      const { context, page } = await signInThroughLogin(browser, origin(OPERATOR_HOST), operatorAdmin);
      try {
        await page.goto(`${origin(OPERATOR_HOST)}/admin/tenant/tenants`);
        const rows = await page.$$eval('[data-tenant]', (els) =>
          els.map((el) => ({
            slug: el.getAttribute('data-tenant'),
            status: el.querySelector('[data-status]')?.getAttribute('data-status'),
            hosts: [...el.querySelectorAll('[data-host]')].map((h) => h.getAttribute('data-host')),
            admin: el.querySelector('a[data-admin-link]')?.getAttribute('href') ?? null,
          })),
        );
        const port = new URL(origin(ACME)).port;
        expect(rows.map((r) => r.slug).sort()).toEqual(['acme', 'globex', app.operator.slug].sort());
        expect(rows.find((r) => r.slug === 'acme')).toEqual({
          slug: 'acme',
          status: 'active',
          hosts: [ACME],
          admin: `http://${ACME}:${port}/admin`,
        });
        expect(rows.find((r) => r.slug === 'globex')).toEqual({
          slug: 'globex',
          status: 'suspended',
          hosts: ['globex.localhost'],
          admin: null,
        });
        // Following the link reaches acme's own admin (its login, since the session is the operator's).
        await page.click('[data-tenant=acme] a[data-admin-link]');
        expect(new URL(page.url()).host).toBe(`${ACME}:${port}`);
        expect(new URL(page.url()).pathname).toBe('/admin/login');
      } finally {
        await context.close();
      }
    });

    it('is refused on a customer host, even to its admin: 403, AUTH_NOT_OPERATOR in words', async () => {
      const { context, page } = await signInThroughLogin(browser, origin(ACME), acmeAdmin);
      try {
        const response = await page.goto(`${origin(ACME)}/admin/tenant/tenants`);
        expect(response!.status()).toBe(403);
        // Said in words; the code is only in the alert's data-code.
        expect(await page.textContent('main')).toContain('opens only at the operator’s own address');
        expect(await page.getAttribute('main [role=alert]', 'data-code')).toBe('AUTH_NOT_OPERATOR');
        expect(await page.locator('[data-tenant]').count()).toBe(0);
      } finally {
        await context.close();
      }
    });
  });

  describe('GET /admin/auth/roles: roles and their permissions as checkboxes', () => {
    it('ticking boxes and saving changes the role’s permissions, as the API then reports', async () => {
      const { context, page } = await signInThroughLogin(browser, origin(ACME), acmeAdmin);
      try {
        await page.goto(`${origin(ACME)}/admin/auth/roles`);
        await Promise.all([page.waitForURL(/\/admin\/auth\/roles\/member$/), page.click('[data-role=member] a')]);
        await page.check('input[name=permissions][value="task:read"]');
        await page.check('input[name=permissions][value="content:read"]');
        await Promise.all([
          page.waitForURL(/\/admin\/auth\/roles\/member\?saved=1$/),
          page.click('main form button[type=submit]'),
        ]);
        expect(await page.textContent('[role=status]')).toContain('Saved');
        expect(await page.isChecked('input[name=permissions][value="task:read"]')).toBe(true);
        const roles = await app
          .http(ACME)
          .get('/api/v1/auth/roles')
          .set('Cookie', await browserCookie(context, origin(ACME)));
        expect(roles.body.items.find((r: { name: string }) => r.name === 'member').permissions).toEqual([
          'content:read',
          'task:read',
        ]);
      } finally {
        await context.close();
      }
    });

    it('an operator permission cannot be granted to a customer role: the box is disabled, and a forced post is refused inline', async () => {
      const { context, page } = await signInThroughLogin(browser, origin(ACME), acmeAdmin);
      try {
        const cookie = await browserCookie(context, origin(ACME));
        const before = (await app.http(ACME).get('/api/v1/auth/roles').set('Cookie', cookie)).body.items.find(
          (r: { name: string }) => r.name === 'support',
        );
        await page.goto(`${origin(ACME)}/admin/auth/roles/support`);
        const box = 'input[name=permissions][value="tenant:manage"]';
        expect(await page.isDisabled(box)).toBe(true);
        // As a hand-edited page would: enable the box and post it.
        await page.$eval(box, (el) => el.removeAttribute('disabled'));
        await page.check(box);
        const [response] = await Promise.all([
          page.waitForResponse((r) => r.request().method() === 'POST'),
          page.click('main form button[type=submit]'),
        ]);
        expect(response.status()).toBe(422);
        await page.waitForLoadState('load');
        const error = await page.textContent(`#${await page.getAttribute(box, 'id')}-error`);
        expect(await page.getAttribute(box, 'aria-describedby')).toContain(
          `${await page.getAttribute(box, 'id')}-error`,
        );
        expect(error).toContain('tenant:manage');
        expect(await page.getAttribute(box, 'aria-invalid')).toBe('true');
        const after = (await app.http(ACME).get('/api/v1/auth/roles').set('Cookie', cookie)).body.items.find(
          (r: { name: string }) => r.name === 'support',
        );
        expect(after).toEqual(before);
      } finally {
        await context.close();
      }
    });
  });
});
