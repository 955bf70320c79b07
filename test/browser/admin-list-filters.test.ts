import type { Page } from 'playwright-core';
import { CompiledQuery } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCustomer } from '../helpers/app.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import {
  axeViolations,
  hasChromium,
  preloadAxe,
  seriousViolations,
  signedInSession,
  useBrowserApp,
  warnNoChromium,
} from './admin-pages-setup.ts';

// Issue 44, point 9: the admin task list filters by status, priority, overdue and assignee in
// Chromium, with JavaScript (htmx swaps the rows and pushes the list's address) and without (a
// plain GET form, written back to the API's parameters by one redirect), at 1280 and 390 px; the
// address can be shared; filters, q and sort survive paging; the page is axe-clean.

warnNoChromium('test/browser/admin-list-filters.test.ts');

const t = useBrowserApp();
const HOST = 'filters.localhost';
const LIST = '/admin/task/tasks';
const HOUR = 3_600_000;
const SIZES = [
  { name: 'a 1280-px screen', width: 1280, height: 900 },
  { name: 'a 390-px phone', width: 390, height: 844 },
];
let admin: { email: string; password: string };
let annLabel: string;
/** The admin's browsers on one session, signed in once through /admin/login. */
let asAdmin: Awaited<ReturnType<typeof signedInSession>>;

beforeAll(async () => {
  if (!hasChromium) return;
  const tenant = await createCustomer(t.app, 'filters', HOST);
  admin = await addUser(t.app, tenant, { roles: ['admin'], password: 'filters admin password', email: 'ada@f.test' });
  const ann = await addUser(t.app, tenant, { roles: ['admin'], email: 'ann@f.test', displayName: 'Ann Lee' });
  annLabel = ann.email;
  const tasks = [
    ['Late open high for Ann', 'open', 'high', -2, ann.id],
    ['Late acknowledged low', 'acknowledged', 'low', -30, null],
    ['Late resolved high for Ann', 'resolved', 'high', -5, ann.id],
    ['Soon open high for Ann', 'open', 'high', 24, ann.id],
    ['Soon open critical', 'open', 'critical', 48, null],
    ['Soon in progress high', 'in_progress', 'high', 72, null],
  ] as const;
  await t.app.services.transactions.run(tenant, async (ctx) => {
    for (const [title, status, priority, hours, assignee] of tasks) {
      await ctx.db.executeQuery(
        CompiledQuery.raw(
          'insert into tasks (title, status, priority, deadline, assignee_id) values ($1, $2, $3, $4, $5)',
          [title, status, priority, new Date(Date.now() + hours * HOUR), assignee],
        ),
      );
    }
  });
  asAdmin = await signedInSession(t.browser, t.origin(HOST), admin);
}, 120_000);

/** The titles of the list's rows, in order. */
const titles = (page: Page) => page.locator('#rows tbody td.cell-title').allTextContents();

/**
 * The filter form, its controls and the rows lie within the window's width: nothing scrolls
 * sideways. Measured by boxes, which a page without JavaScript has too.
 */
async function fitsWidth(page: Page): Promise<boolean> {
  const width = page.viewportSize()!.width + 0.5;
  const boxes = await Promise.all(
    ['form.list-filters', 'form.list-filters select', 'form.list-filters input:not([type=hidden])', '#rows']
      .map((selector) => page.locator(selector))
      .map(async (locator) => Promise.all((await locator.all()).map((one) => one.boundingBox()))),
  );
  return boxes.flat().every((box) => box !== null && box.x >= 0 && box.x + box.width <= width);
}

/**
 * Every axe finding inside the filter form (any impact), and the page's serious ones. axe runs as
 * a script: without JavaScript the page is checked as the server renders it, opened in a page
 * that runs scripts (`axePage`), the same markup.
 */
async function axeFindings(page: Page): Promise<string[]> {
  const inForm = await axeViolations(page, ['form.list-filters', '.filter-presets']);
  return [...inForm.map((v) => `${v.impact} ${v.id}: ${v.help}`), ...(await seriousViolations(page))];
}

/**
 * A browser for the test: the page the person uses (with or without JavaScript), and axe's check of
 * what that page shows (in a page that runs scripts when the person's does not: the same address).
 * axe's source is loaded into each document of the checking browser as it opens (preloadAxe).
 */
async function session(javaScriptEnabled: boolean, size: { width: number; height: number }) {
  const person = await asAdmin({ javaScriptEnabled, viewport: size });
  const checker = javaScriptEnabled ? undefined : await asAdmin({ javaScriptEnabled: true, viewport: size });
  await preloadAxe((checker ?? person).context);
  return {
    ...person,
    axe: async (): Promise<string[]> => {
      if (!checker) return axeFindings(person.page);
      await checker.page.goto(person.page.url());
      return axeFindings(checker.page);
    },
    close: async () => {
      await person.context.close();
      await checker?.context.close();
    },
  };
}

/** Submits the filter form and waits for the list's address to hold this parameter. */
async function show(page: Page, expected: RegExp): Promise<void> {
  await Promise.all([page.waitForURL(expected), page.locator('form.list-filters button[type=submit]').click()]);
}

/** The row titles, sorted, once they are these (htmx may swap them just after the address moves). */
const rowsAre = (page: Page, expected: string[], sorted = true) =>
  expect
    .poll(async () => (sorted ? (await titles(page)).sort() : await titles(page)), { timeout: 5000 })
    .toEqual(sorted ? [...expected].sort() : expected);

describe.skipIf(!hasChromium)('the admin task list filters', () => {
  for (const javaScriptEnabled of [true, false]) {
    for (const size of SIZES) {
      const how = `${javaScriptEnabled ? 'with' : 'without'} JavaScript, on ${size.name}`;

      it(`by status, priority and assignee, the address a shareable list query (${how})`, async () => {
        const { context, page, axe, close } = await session(javaScriptEnabled, size);
        try {
          await page.goto(`${t.origin(HOST)}${LIST}`);
          expect(await fitsWidth(page)).toBe(true);
          expect(await axe()).toEqual([]);

          // With scripts, htmx swaps the rows in place: the page (marked here) is not loaded again.
          if (javaScriptEnabled)
            await page.locator('form.list-filters').evaluate((form) => form.setAttribute('data-kept', 'yes'));
          await page.getByLabel('Status', { exact: true }).selectOption({ label: 'Open' });
          await page.getByLabel('Priority', { exact: true }).selectOption({ label: 'High' });
          await show(page, /status=eq\.open/);
          expect(await page.locator('form.list-filters[data-kept="yes"]').count()).toBe(javaScriptEnabled ? 1 : 0);
          expect(new URL(page.url()).search).toBe('?status=eq.open&priority=eq.high');
          await rowsAre(page, ['Late open high for Ann', 'Soon open high for Ann']);

          await page.getByLabel('Assigned to', { exact: true }).selectOption({ label: annLabel });
          await page.getByLabel('Status', { exact: true }).selectOption({ label: 'Any' });
          await show(page, /assigneeId=eq\./);
          const shared = page.url();
          expect([...new URL(shared).searchParams.keys()]).toEqual(['priority', 'assigneeId']);
          await rowsAre(page, ['Late open high for Ann', 'Late resolved high for Ann', 'Soon open high for Ann']);
          expect(await fitsWidth(page)).toBe(true);
          expect(await axe()).toEqual([]);

          // The address, opened afresh (shared), shows the same rows and the same choices.
          const other = await context.newPage();
          await other.setViewportSize(size);
          await other.goto(shared);
          expect((await titles(other)).sort()).toEqual((await titles(page)).sort());
          expect(await other.getByLabel('Priority', { exact: true }).inputValue()).toBe('eq.high');
          await other.close();
        } finally {
          await close();
        }
      }, 90_000);

      it(`shows what is overdue and not resolved in two clicks, and by due dates (${how})`, async () => {
        const { page, axe, close } = await session(javaScriptEnabled, size);
        try {
          // Click 1: the list (from the sidebar, behind Menu on a phone).
          const nav = page.locator('nav[aria-label="Main"]');
          if (size.width < 600) await nav.locator('summary').click();
          await Promise.all([
            page.waitForURL(/\/admin\/task\/tasks$/),
            nav.getByRole('link', { name: 'Tasks' }).click(),
          ]);
          // Click 2: the preset.
          await Promise.all([
            page.waitForURL(/deadline=lt\.now/),
            page.getByRole('link', { name: 'Overdue and not resolved' }).click(),
          ]);
          // The most overdue first; not the resolved one, nor those still to come.
          await rowsAre(page, ['Late acknowledged low', 'Late open high for Ann'], false);
          expect(await page.getByRole('link', { name: 'Overdue and not resolved' }).getAttribute('aria-current')).toBe(
            'true',
          );
          expect(await fitsWidth(page)).toBe(true);
          expect(await axe()).toEqual([]);

          // By due dates: from and to, written back as the API's gte and lte.
          await page.goto(`${t.origin(HOST)}${LIST}`);
          const from = new Date(Date.now() + 12 * HOUR).toISOString().slice(0, 16);
          const to = new Date(Date.now() + 60 * HOUR).toISOString().slice(0, 16);
          await page.locator('#filter-deadline-from').fill(from);
          await page.locator('#filter-deadline-to').fill(to);
          await show(page, /deadline=gte\./);
          const params = [...new URL(page.url()).searchParams];
          expect(params).toEqual([
            ['deadline', `gte.${from}:00Z`],
            ['deadline', `lte.${to}:00Z`],
          ]);
          await rowsAre(page, ['Soon open critical', 'Soon open high for Ann']);
        } finally {
          await close();
        }
      }, 90_000);

      it(`keeps filters, q and sort through paging (${how})`, async () => {
        const { page, close } = await session(javaScriptEnabled, size);
        try {
          await page.goto(`${t.origin(HOST)}${LIST}?priority=eq.high&q=for%20ann&sort=title&limit=1`);
          expect(await titles(page)).toEqual(['Late open high for Ann']);
          await Promise.all([page.waitForURL(/offset=1/), page.getByRole('link', { name: 'Next page' }).click()]);
          await rowsAre(page, ['Late resolved high for Ann'], false);
          const url = new URL(page.url());
          expect(url.searchParams.get('priority')).toBe('eq.high');
          expect(url.searchParams.get('q')).toBe('for ann');
          expect(url.searchParams.get('sort')).toBe('title');
          await Promise.all([page.waitForURL(/offset=2/), page.getByRole('link', { name: 'Next page' }).click()]);
          await rowsAre(page, ['Soon open high for Ann'], false);
          expect(await page.getByRole('link', { name: 'Next page' }).count()).toBe(0);
        } finally {
          await close();
        }
      }, 90_000);
    }
  }
});
