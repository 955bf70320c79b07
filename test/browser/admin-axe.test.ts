import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR_HOST, createCustomer, startTestApp, type TestApp } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import {
  hasChromium,
  closeContexts,
  workerChromium,
  listen,
  seriousViolations,
  signInThroughLogin,
  signedInSession,
  type SignedInSession,
  warnNoChromium,
} from './admin-pages-setup.ts';

warnNoChromium('test/browser/admin-axe.test.ts');

let app: TestApp;
let browser: Browser;
let acme: TenantRef;
let origin: (host: string) => string;
let admin: { id: string; email: string; password: string };
let operatorAdmin: { id: string; email: string; password: string };
let taskId: string;
let asAdmin: SignedInSession;

const ACME = 'acme.localhost';

/** Serious and critical violations of the page as it stands, one line each, for a readable failure. */
describe.skipIf(!hasChromium)('accessibility: no serious or critical axe violation on any kind of admin page', () => {
  beforeAll(async () => {
    app = await startTestApp();
    acme = await createCustomer(app, 'acme', ACME);
    admin = await addUser(app, acme, { roles: ['admin'], password: 'acme admin password' });
    operatorAdmin = await addUser(app, app.operator, { roles: ['admin'], password: 'operator password' });
    origin = await listen(app);
    const login = await app
      .http(ACME)
      .post('/api/v1/auth/login')
      .send({ email: admin.email, password: admin.password });
    const cookie = login.headers['set-cookie']![0]!.split(';', 1)[0]!;
    for (let i = 1; i <= 25; i++) {
      const res = await app
        .http(ACME)
        .post('/api/v1/task/tasks')
        .set('Cookie', cookie)
        .send({ title: `Task ${i}`, priority: 'low', deadline: '2099-01-01T00:00:00Z' })
        .expect(201);
      taskId ??= res.body.id;
    }
    browser = await workerChromium();
    asAdmin = await signedInSession(browser, origin(ACME), admin);
  });
  afterAll(async () => {
    if (browser) await closeContexts(browser);
    await app?.close();
  });

  it('the login page', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${origin(ACME)}/admin/login`);
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('the fixed pages a customer admin sees: dashboard, health (checks loaded), gallery, roles list, role edit', async () => {
    const { context, page } = await asAdmin();
    try {
      const seen: Record<string, string[]> = {};
      for (const [kind, path] of [
        ['dashboard', '/admin'],
        ['health', '/admin/health'],
        ['gallery', '/admin/_gallery'],
        ['roles list', '/admin/auth/roles'],
        ['role edit', '/admin/auth/roles/member'],
      ] as const) {
        await page.goto(`${origin(ACME)}${path}`);
        if (kind === 'health') await page.waitForSelector('[data-check=database][data-ok]');
        seen[kind] = await seriousViolations(page);
      }
      expect(seen).toEqual({ dashboard: [], health: [], gallery: [], 'roles list': [], 'role edit': [] });
    } finally {
      await context.close();
    }
  }, 120_000);

  it('the tenant switcher, as the operator sees it', async () => {
    const { context, page } = await signInThroughLogin(browser, origin(OPERATOR_HOST), operatorAdmin);
    try {
      await page.goto(`${origin(OPERATOR_HOST)}/admin/tenant/tenants`);
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  // axe takes a few seconds a page on a busy machine: the generated pages are split in two tests.
  it('the generated list, and its rows fragment after an htmx page swap', async () => {
    const { context, page } = await asAdmin();
    try {
      const seen: Record<string, string[]> = {};
      await page.goto(`${origin(ACME)}/admin/task/tasks`);
      seen.list = await seriousViolations(page);
      const rows = page.waitForResponse((r) => new URL(r.url()).pathname === '/admin/task/tasks/rows');
      await page.click('a[rel=next]');
      expect((await rows).request().headers()['hx-request']).toBe('true');
      // Swapped once htmx's request is over (the page keeps its live stream open: never network-idle).
      await page.waitForFunction(() => {
        const { document } = globalThis as unknown as { document: { querySelector(selector: string): unknown } };
        return document.querySelector('.htmx-request') === null;
      });
      seen.rows = await seriousViolations(page);
      expect(seen).toEqual({ list: [], rows: [] });
    } finally {
      await context.close();
    }
  }, 120_000);

  it('the generated new, detail, edit, delete and command form pages', async () => {
    const { context, page } = await asAdmin();
    try {
      const seen: Record<string, string[]> = {};
      for (const [kind, path] of [
        ['new', '/admin/task/tasks/new'],
        ['detail', `/admin/task/tasks/${taskId}`],
        ['edit', `/admin/task/tasks/${taskId}/edit`],
        ['delete', `/admin/task/tasks/${taskId}/delete`],
        ['command form', `/admin/task/tasks/${taskId}/assign`],
      ] as const) {
        const response = await page.goto(`${origin(ACME)}${path}`);
        expect(response!.status(), path).toBe(200);
        seen[kind] = await seriousViolations(page);
      }
      expect(seen).toEqual({ new: [], detail: [], edit: [], delete: [], 'command form': [] });
    } finally {
      await context.close();
    }
  }, 120_000);

  it('a form showing inline validation errors', async () => {
    const { context, page } = await asAdmin();
    try {
      await page.goto(`${origin(ACME)}/admin/task/tasks/${taskId}/edit`);
      await page.fill('[name=title]', '');
      await page.$$eval('[required], [minlength]', (els) =>
        els.forEach((el) => {
          el.removeAttribute('required');
          el.removeAttribute('minlength');
        }),
      );
      await page.click('main form button[type=submit]');
      await page.waitForSelector('[aria-invalid=true]');
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);
});
