import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCustomer } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import { readableText } from '../helpers/readable-text.ts';
import {
  hasChromium,
  seriousViolations,
  signInThroughLogin,
  useBrowserApp,
  warnNoChromium,
} from './admin-pages-setup.ts';

// Issue 42, points 8, 9 and 10: what a new user meets first. A list opens on the newest first, so
// what was just made is on page 1 (the API keeps its documented oldest-first default). A browser
// at a tenant host's root is sent to the shell, while an API client keeps the JSON 404. And pages
// and posts are called so, by their declared labels, never "Contents" or "a content".

warnNoChromium('test/browser/admin-first-look.test.ts');

const t = useBrowserApp();
const ACME = 'acme.localhost';
const WIDTHS = [
  { name: 'desktop', width: 1280, height: 900 },
  { name: 'phone', width: 390, height: 844 },
];

let acme: TenantRef;
let admin: { id: string; email: string; password: string };
let cookie: string;

const titles = (page: Page) => page.locator('#rows tbody tr td:first-child').allInnerTexts();

beforeAll(async () => {
  if (!hasChromium) return;
  acme = await createCustomer(t.app, 'acme', ACME);
  admin = await addUser(t.app, acme, { roles: ['admin'], password: 'acme admin password' });
  const login = await t.app
    .http(ACME)
    .post('/api/v1/auth/login')
    .send({ email: admin.email, password: admin.password });
  cookie = login.headers['set-cookie']![0]!.split(';', 1)[0]!;
});

describe.skipIf(!hasChromium)('a list opens on the newest first', () => {
  beforeAll(async () => {
    // A page and one more: the newest would land on page 2 in the API's order.
    for (let i = 1; i <= 20; i++)
      await t.app
        .http(ACME)
        .post('/api/v1/task/tasks')
        .set('Cookie', cookie)
        .send({ title: `Task ${String(i).padStart(2, '0')}`, priority: 'low', deadline: '2099-01-01T00:00:00Z' })
        .expect(201);
  });

  it.each(WIDTHS)('a task made through the form is first on page 1 of the tasks ($name)', async (size) => {
    const { context, page } = await signInThroughLogin(t.browser, t.origin(ACME), admin);
    try {
      await page.setViewportSize(size);
      await page.goto(`${t.origin(ACME)}/admin/task/tasks/new`);
      await page.fill('input[name=title]', `Made just now (${size.name})`);
      await page.fill('input[name=deadline]', '2099-01-01T09:00');
      await Promise.all([
        page.waitForURL(/\/admin\/task\/tasks\/[0-9a-f-]{36}$/),
        page.click('#resource-form .actions button[type=submit]:not([name])'),
      ]);
      await page.goto(`${t.origin(ACME)}/admin/task/tasks`);
      const shown = await titles(page);
      expect(shown[0]).toBe(`Made just now (${size.name})`);
      expect(shown).toHaveLength(20);
      expect(await page.locator('#rows caption').textContent()).toBe('Tasks, newest first');
      // The oldest is on the next page.
      await page.click('a[rel=next]');
      await page.waitForURL(/offset=20/);
      expect((await titles(page)).at(-1)).toBe('Task 01');
      expect(await seriousViolations(page)).toEqual([]);

      // The API's own default stays the documented one: oldest first.
      const api = await t.app.http(ACME).get('/api/v1/task/tasks').set('Cookie', cookie).expect(200);
      expect(api.body.items[0].title).toBe('Task 01');
    } finally {
      await context.close();
    }
  });
});

describe.skipIf(!hasChromium)('a tenant host’s root', () => {
  it.each(WIDTHS)(
    'a browser opening / lands in the admin shell: the sign-in page, then the dashboard ($name)',
    async (size) => {
      const context = await t.browser.newContext({ viewport: size });
      try {
        const page = await context.newPage();
        const answer = await page.goto(`${t.origin(ACME)}/`);
        expect(new URL(page.url()).pathname).toBe('/admin/login');
        expect(new URL(page.url()).searchParams.get('next')).toBe('/admin');
        expect(answer?.status()).toBe(200);
        expect(await seriousViolations(page)).toEqual([]);
        await page.fill('input[name=email]', admin.email);
        await page.fill('input[name=password]', admin.password);
        await Promise.all([page.waitForURL(`${t.origin(ACME)}/admin`), page.click('main form button[type=submit]')]);
        // Signed in, the root leads straight to the dashboard.
        await page.goto(`${t.origin(ACME)}/`);
        expect(new URL(page.url()).pathname).toBe('/admin');
      } finally {
        await context.close();
      }
    },
  );

  it('the API’s clients keep the JSON 404 at /; a browser’s Accept gets a redirect; the answer varies with Accept', async () => {
    const root = (accept?: string) => {
      const req = t.app.http(ACME).get('/');
      return accept === undefined ? req : req.set('Accept', accept);
    };
    for (const accept of [
      undefined,
      'application/json',
      '*/*',
      'application/problem+json, */*;q=0.5',
      'text/html;q=0',
    ]) {
      const res = await root(accept);
      expect(res.status, String(accept)).toBe(404);
      expect(res.headers['content-type'], String(accept)).toMatch(/^application\/problem\+json/);
      expect(res.body.code, String(accept)).toBe('ROUTE_NOT_FOUND');
      expect(res.headers.vary, String(accept)).toMatch(/Accept/i);
    }
    const browser = await root('text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8');
    expect(browser.status).toBe(302);
    expect(browser.headers.location).toBe('/admin');
    expect(browser.headers.vary).toMatch(/Accept/i);
    // A host no tenant has keeps its own answer, whatever it accepts.
    const nowhere = await t.app.http('nowhere.localhost').get('/').set('Accept', 'text/html');
    expect(nowhere.status).toBe(404);
    expect(nowhere.body.code).toBe('NO_SITE');
  });
});

describe.skipIf(!hasChromium)('pages and posts are called so', () => {
  /** What a person reads on the page (its title, text and read attributes) that names content as the API does. */
  const apiWording = async (page: Page): Promise<string[]> =>
    readableText(await page.content()).filter(
      (text) =>
        /\bcontents\b/i.test(text) || /\b(a|an|one|1|this|new|create|edit|delete|all|no|search) content\b/i.test(text),
    );

  it.each(WIDTHS)('every page of theirs names them by the declared labels ($name)', async (size) => {
    const made = await t.app
      .http(ACME)
      .post('/api/v1/content/contents')
      .set('Cookie', cookie)
      .send({ slug: `named-${size.name}`, title: `Named (${size.name})`, kind: 'page', body: 'Text' })
      .expect(201);
    const { context, page } = await signInThroughLogin(t.browser, t.origin(ACME), admin);
    try {
      await page.setViewportSize(size);
      const sidebar = await page.locator('nav[aria-label="Main"] a').allTextContents();
      expect(sidebar).toContain('Pages and posts');
      expect(sidebar).not.toContain('Content');
      const card = page.locator('[data-resource="content.content"]');
      expect(await card.locator('.card-title').textContent()).toBe('Pages and posts');
      expect(await apiWording(page)).toEqual([]);

      const base = `${t.origin(ACME)}/admin/content/contents`;
      await page.goto(base);
      expect(await page.title()).toBe('Pages and posts · Tenantry');
      expect(await page.locator('h1').textContent()).toBe('Pages and posts');
      expect(await page.getByRole('link', { name: 'New page or post' }).count()).toBe(1);
      expect(await page.getByLabel('Search pages and posts').count()).toBe(1);
      expect(await page.locator('#rows caption').textContent()).toBe('Pages and posts, newest first');
      expect(await apiWording(page)).toEqual([]);
      expect(await seriousViolations(page)).toEqual([]);

      await page.goto(`${base}/new`);
      expect(await page.locator('h1').textContent()).toBe('New page or post');
      expect(await page.getByRole('button', { name: 'Create page or post' }).count()).toBe(1);
      expect(await apiWording(page)).toEqual([]);

      await page.goto(`${base}/${made.body.id}`);
      expect(await page.locator('h1').textContent()).toBe(`Page or post: Named (${size.name})`);
      expect(await page.locator('[hx-confirm]').getAttribute('hx-confirm')).toBe('Delete this page or post?');
      expect(await page.getByRole('link', { name: 'All pages and posts' }).count()).toBe(1);
      expect(await apiWording(page)).toEqual([]);

      await page.goto(`${base}/${made.body.id}/delete`);
      expect(await page.getByRole('button', { name: 'Delete page or post' }).count()).toBe(1);
      expect(await apiWording(page)).toEqual([]);

      // Where permissions are read out (roles, access tokens): in the same words.
      for (const path of ['/admin/auth/roles/admin', '/admin/auth/tokens']) {
        await page.goto(`${t.origin(ACME)}${path}`);
        expect(await page.locator('main').textContent(), path).toContain('List and read pages and posts');
        expect(await apiWording(page), path).toEqual([]);
      }

      // The dashboard counts them in the same words: one is "page or post".
      await page.goto(`${t.origin(ACME)}/admin`);
      const note = ((await card.locator('.card-count').textContent()) ?? '').replace(/\s+/g, ' ').trim();
      expect(note).toMatch(/^\d+ (page or post|pages and posts)$/);
    } finally {
      await context.close();
    }
  });
});
