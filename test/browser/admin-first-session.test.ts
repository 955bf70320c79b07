import type { Browser as Chromium, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR_HOST, createCustomer, startTestApp, type TestApp } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { SHELL_FILES } from '../../framework/admin/assets.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import {
  hasChromium,
  closeContexts,
  workerChromium,
  listen,
  seriousViolations,
  signInThroughLogin,
  warnNoChromium,
} from './admin-pages-setup.ts';

// Issue 35, point 7: the small things a first session meets. A favicon the CSP lets load; a
// refused sign-in that stays on /admin/login and says so once, with and without JavaScript; an
// empty list that says so once; list tables on a 390-px-wide phone with no cell cut off; and axe
// on those pages at that width.

warnNoChromium('test/browser/admin-first-session.test.ts');

let app: TestApp;
let browser: Chromium;
let origin: (host: string) => string;
let admin: { id: string; email: string; password: string };
let emptyAdmin: { id: string; email: string; password: string };
let operatorAdmin: { id: string; email: string; password: string };
let acme: TenantRef;

const ACME = 'acme.localhost';
const EMPTY = 'empty.localhost';
const PHONE = { width: 390, height: 844 };
const REFUSED = 'The address or the password is wrong.';

/** How often a text appears in what the page shows (innerText: visible text only). */
// biome-ignore lint/performance/useDomNodeTextContent: the text shown (innerText), not every text node, is what a person reads
const timesShown = async (page: Page, text: string) => (await page.locator('body').innerText()).split(text).length - 1;

/** The few browser globals the checks below use (the project compiles without the DOM library). */
interface Box {
  left: number;
  right: number;
}
interface Cell {
  tagName: string;
  innerText: string;
  scrollWidth: number;
  clientWidth: number;
  getBoundingClientRect(): Box;
  closest(selector: string): Cell | null;
}
interface Browser {
  innerWidth: number;
  getComputedStyle(element: Cell, pseudo?: string): { display: string; overflowX: string; content: string };
  document: { documentElement: { scrollWidth: number } };
  Image: new () => { naturalWidth: number; src: string; onload: () => void; onerror: () => void };
}

/**
 * Every table cell in main that is cut off: wider content than its box (scrollWidth past
 * clientWidth, with overflow hidden or not), or a box past the window's right or left edge when
 * the table is not inside a frame that scrolls sideways (a frame that does scroll must show it can).
 */
async function clippedCells(page: Page): Promise<string[]> {
  return page.$$eval('main table th, main table td', (elements) => {
    const browser = globalThis as unknown as Browser;
    const width = browser.innerWidth;
    const found: string[] = [];
    for (const cell of elements as unknown as Cell[]) {
      if (browser.getComputedStyle(cell).display === 'none') continue;
      const box = cell.getBoundingClientRect();
      // biome-ignore lint/performance/useDomNodeTextContent: the text shown (innerText), not every text node, is what a person reads
      const name = `${cell.tagName.toLowerCase()} "${(cell.innerText || '').slice(0, 40)}"`;
      if (cell.scrollWidth > cell.clientWidth + 1)
        found.push(`${name}: content ${cell.scrollWidth}px in ${cell.clientWidth}px`);
      const frame = cell.closest('.table-wrap');
      const scrolls =
        frame !== null && browser.getComputedStyle(frame).overflowX === 'auto' && frame.scrollWidth > frame.clientWidth;
      if (!scrolls && (box.right > width + 1 || box.left < -1))
        found.push(`${name}: at ${Math.round(box.left)}–${Math.round(box.right)} of ${width}px`);
    }
    const page = browser.document.documentElement.scrollWidth;
    if (page > width + 1) found.push(`the page scrolls sideways: ${page}px`);
    return found;
  });
}

/** A computed style of a cell (and of its ::before). */
const styleOf = (cell: ReturnType<Page['locator']>, property: 'display' | 'content', pseudo?: string) =>
  cell.evaluate(
    (element, [name, before]) =>
      (globalThis as unknown as Browser).getComputedStyle(element as unknown as Cell, before)[
        name as 'display' | 'content'
      ],
    [property, pseudo] as const,
  );

describe.skipIf(!hasChromium)('a first session in the admin shell', () => {
  beforeAll(async () => {
    app = await startTestApp();
    acme = await createCustomer(app, 'acme', ACME);
    const empty = await createCustomer(app, 'empty', EMPTY);
    admin = await addUser(app, acme, { roles: ['admin'], password: 'acme admin password', displayName: 'Ada Admin' });
    emptyAdmin = await addUser(app, empty, { roles: ['admin'], password: 'empty admin password' });
    operatorAdmin = await addUser(app, app.operator, { roles: ['admin'], password: 'operator password' });
    origin = await listen(app);
    const login = await app
      .http(ACME)
      .post('/api/v1/auth/login')
      .send({ email: admin.email, password: admin.password });
    const cookie = login.headers['set-cookie']![0]!.split(';', 1)[0]!;
    // Long, unbroken values: a title with no space to wrap at, a long web address.
    for (const title of [
      'Call the customer back about the renewal of the support contract',
      `Renew-${'certificate'.repeat(12)}`,
      'Short',
    ]) {
      await app
        .http(ACME)
        .post('/api/v1/task/tasks')
        .set('Cookie', cookie)
        .send({ title, priority: 'critical', deadline: '2099-01-01T00:00:00Z' })
        .expect(201);
    }
    await app
      .http(ACME)
      .post('/api/v1/content/contents')
      .set('Cookie', cookie)
      .send({ slug: `a-${'very-long-slug-'.repeat(5)}end`, title: 'Welcome', kind: 'page', body: '# Hi' })
      .expect(201);
    await app
      .http(ACME)
      .post('/api/v1/webhook/endpoints')
      .set('Cookie', cookie)
      .send({
        url: `https://hooks.example.com/${'path/'.repeat(20)}tenantry`,
        description: 'The receiving system of the accounting department',
        events: ['*'],
      })
      .expect(201);
    browser = await workerChromium();
  }, 120_000);
  afterAll(async () => {
    if (browser) await closeContexts(browser);
    await app?.close();
  });

  it('links a favicon from /admin/_assets that the page’s CSP lets load', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const refusals: string[] = [];
      page.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) refusals.push(message.text());
      });
      await page.goto(`${origin(ACME)}/admin/login`);
      const href = await page.getAttribute('link[rel=icon]', 'href');
      expect(href).toBe(SHELL_FILES.favicon.href);
      expect(href).toMatch(/^\/admin\/_assets\/favicon\.svg\?v=[\w-]{16}$/);
      const icon = await app.http(ACME).get(href!);
      expect(icon.status).toBe(200);
      expect(icon.headers['content-type']).toBe('image/svg+xml');
      // Loaded as an image by the page itself, under its policy (img-src).
      const width = await page.evaluate(
        (url) =>
          new Promise<number>((done) => {
            const image = new (globalThis as unknown as Browser).Image();
            image.onload = () => done(image.naturalWidth);
            image.onerror = () => done(-1);
            image.src = url;
          }),
        href!,
      );
      expect(width).toBeGreaterThan(0);
      expect(refusals).toEqual([]);
    } finally {
      await context.close();
    }
  });

  for (const javaScriptEnabled of [true, false]) {
    it(`keeps a refused sign-in on /admin/login and says so once (JavaScript ${javaScriptEnabled ? 'on' : 'off'})`, async () => {
      const context = await browser.newContext({ javaScriptEnabled });
      try {
        const page = await context.newPage();
        await page.goto(`${origin(ACME)}/admin/login?next=${encodeURIComponent('/admin/task/tasks')}`);
        await page.getByLabel('Email address').fill(admin.email);
        await page.getByLabel('Password').fill('not the password');
        await Promise.all([
          page.waitForLoadState('load'),
          page.getByRole('button', { name: 'Sign in', exact: true }).click(),
        ]);
        await page.waitForSelector('[role=alert]');
        const at = new URL(page.url());
        expect(at.pathname).toBe('/admin/login');
        expect(at.searchParams.get('next')).toBe('/admin/task/tasks');
        expect(await timesShown(page, REFUSED)).toBe(1);
        await expect(page.getByLabel('Email address').inputValue()).resolves.toBe(admin.email);
        // And from there, the right password goes on to the page asked for.
        await page.getByLabel('Password').fill(admin.password);
        await Promise.all([
          page.waitForURL(`${origin(ACME)}/admin/task/tasks`),
          page.getByRole('button', { name: 'Sign in', exact: true }).click(),
        ]);
      } finally {
        await context.close();
      }
    });
  }

  it('says once that a list is empty', async () => {
    const { context, page } = await signInThroughLogin(browser, origin(EMPTY), emptyAdmin);
    try {
      for (const [path, words] of [
        ['/admin/task/tasks', 'No tasks'],
        ['/admin/content/contents', 'No pages and posts'],
        ['/admin/webhook/endpoints', 'No webhook endpoints'],
      ] as const) {
        await page.goto(`${origin(EMPTY)}${path}`);
        expect(await timesShown(page, words), path).toBe(1);
        expect(await page.locator('main nav.pager').count(), path).toBe(0);
      }
    } finally {
      await context.close();
    }
  });

  it('on a 390-px-wide screen stacks the list rows, cutting no cell off, and passes axe', async () => {
    const { context, page } = await signInThroughLogin(browser, origin(ACME), admin);
    try {
      await page.setViewportSize(PHONE);
      const seen: Record<string, string[]> = {};
      for (const path of [
        '/admin/task/tasks',
        '/admin/content/contents',
        '/admin/user/users',
        '/admin/webhook/endpoints',
        '/admin/auth/roles',
      ]) {
        await page.goto(`${origin(ACME)}${path}`);
        seen[`${path} clipped`] = await clippedCells(page);
        seen[`${path} axe`] = await seriousViolations(page);
      }
      for (const path of ['/admin/task/tasks/new', '/admin/login']) {
        await page.goto(`${origin(ACME)}${path}`);
        seen[`${path} axe`] = await seriousViolations(page);
      }
      expect(Object.entries(seen).filter(([, found]) => found.length > 0)).toEqual([]);
      // A generated list's rows are stacked as cards (issue 42, point 7: tighter than a line a cell):
      // the row a box its cells flow in, each cell labelled, the title heading it.
      await page.goto(`${origin(ACME)}/admin/task/tasks`);
      const row = page.locator('main table tbody tr').first();
      const cell = row.locator('td').nth(1);
      expect(await styleOf(row, 'display')).toBe('flex');
      expect(await styleOf(cell, 'display')).toBe('block');
      expect(await styleOf(cell, 'content', '::before')).toBe('"Status"');
      expect(await styleOf(row.locator('td.cell-title'), 'content', '::before')).toBe('none');
      // On a wide screen the same list is an ordinary table.
      await page.setViewportSize({ width: 1280, height: 800 });
      await page.goto(`${origin(ACME)}/admin/task/tasks`);
      expect(await styleOf(cell, 'display')).toBe('table-cell');
      expect(await clippedCells(page)).toEqual([]);
    } finally {
      await context.close();
    }
  }, 180_000);

  it('on a 390-px-wide screen, the operator’s lists cut no cell off either', async () => {
    const { context, page } = await signInThroughLogin(browser, origin(OPERATOR_HOST), operatorAdmin);
    try {
      await page.setViewportSize(PHONE);
      const seen: Record<string, string[]> = {};
      for (const path of ['/admin/billing/plans', '/admin/tenant/tenants']) {
        await page.goto(`${origin(OPERATOR_HOST)}${path}`);
        seen[path] = await clippedCells(page);
      }
      expect(Object.entries(seen).filter(([, found]) => found.length > 0)).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);
});
