import type { Locator, Page } from 'playwright-core';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { OPERATOR_HOST } from '../helpers/app.ts';
import { hasChromium, seriousViolations, signedInSession, useBrowserApp, warnNoChromium } from './admin-pages-setup.ts';
import { shellSample, WIDTHS, type ShellSample } from './shell-sample.ts';

// Issue 42, point 5: every page says who and where (the tenant's name, the signed-in person, Sign
// out); the dashboard tells a customer nothing about the database, and its subscription card leads
// to the subscription; lists mark overdue rows (from the entity's declaration, admin.overdue); the
// notification badge is hidden at zero; each sidebar entry opens a page titled as the entry.

warnNoChromium('test/browser/admin-who-where.test.ts');

const t = useBrowserApp();
let sample: ShellSample;
/** The customer's and the operator's administrators' browsers, each on one session signed in once through /admin/login. */
let asAdmin: Awaited<ReturnType<typeof signedInSession>>;
let asOperator: Awaited<ReturnType<typeof signedInSession>>;

beforeAll(async () => {
  if (!hasChromium) return;
  sample = await shellSample(t.app, 'acme');
  asAdmin = await signedInSession(t.browser, t.origin(sample.host), sample.admin);
  asOperator = await signedInSession(t.browser, t.origin(OPERATOR_HOST), sample.operatorAdmin);
}, 120_000);

/** The element lies within the window's width: a person sees it without scrolling sideways. */
async function onScreen(locator: Locator, page: Page): Promise<boolean> {
  const box = await locator.boundingBox();
  const width = page.viewportSize()!.width;
  return box !== null && box.width > 0 && box.x >= 0 && box.x + box.width <= width + 0.5;
}

const sidebarEntries = (page: Page) =>
  page
    .locator('nav[aria-label="Main"] a')
    .evaluateAll((links) => links.map((a) => ({ label: (a.textContent ?? '').trim(), href: a.getAttribute('href')! })));

describe.skipIf(!hasChromium)('the header says who and where, on every page', () => {
  it.each(WIDTHS)(
    'the tenant’s name, the person and Sign out, on each page of the sidebar ($name)',
    async (size) => {
      const { context, page } = await asAdmin();
      try {
        await page.setViewportSize(size);
        const entries = await sidebarEntries(page);
        expect(entries.length).toBeGreaterThan(8);
        for (const path of ['/admin', ...entries.map((e) => e.href), `/admin/task/tasks/${sample.tasks.overdue}`]) {
          await page.goto(`${t.origin(sample.host)}${path}`);
          const tenant = page.locator('header [data-tenant-name]');
          const person = page.locator('header [data-person]');
          const signOut = page.getByRole('button', { name: 'Sign out' });
          expect(await tenant.textContent(), path).toBe(sample.tenantName);
          expect(await person.textContent(), path).toBe('Signed in as Ada Admin');
          expect(await person.getAttribute('title'), path).toBe(sample.admin.email);
          for (const [what, shown] of [
            ['tenant', tenant],
            ['person', person],
            ['sign out', signOut],
          ] as const) {
            expect(await shown.isVisible(), `${path}: ${what}`).toBe(true);
            expect(await onScreen(shown, page), `${path}: ${what}`).toBe(true);
          }
        }
        expect(await seriousViolations(page)).toEqual([]);
      } finally {
        await context.close();
      }
    },
    180_000,
  );

  it('the operator’s pages name the operator’s tenant', async () => {
    const { context, page } = await asOperator();
    try {
      const name = await t.app.services.db.pool.query<{ name: string }>('select name from tenants where is_operator');
      expect(await page.locator('header [data-tenant-name]').textContent()).toBe(name.rows[0]!.name);
      expect(await page.locator('header [data-person]').textContent()).toBe('Signed in as Olivia Operator');
    } finally {
      await context.close();
    }
  });
});

describe.skipIf(!hasChromium)('the dashboard', () => {
  it.each(WIDTHS)(
    'a customer sees no database check; the subscription card opens the subscription ($name)',
    async (size) => {
      const { context, page } = await asAdmin();
      try {
        await page.setViewportSize(size);
        expect(await page.locator('main').textContent()).not.toMatch(/database/i);
        expect(await page.locator('[data-check]').count()).toBe(0);
        const card = page.locator('[data-resource="billing.subscription"]');
        expect(await card.locator('.card-title').textContent()).toBe('Subscription');
        await Promise.all([page.waitForURL(/\/admin\/billing\/subscription$/), card.getByRole('link').click()]);
        expect(await page.locator('main h1').textContent()).toBe('Subscription');
        expect(await seriousViolations(page)).toEqual([]);
      } finally {
        await context.close();
      }
    },
  );

  it('the operator sees whether the database check passes', async () => {
    const { context, page } = await asOperator();
    try {
      expect(await page.locator('[data-check=database]').getAttribute('data-ok')).toBe('true');
      expect(await page.locator('main').textContent()).toContain('Database check passes');
    } finally {
      await context.close();
    }
  });
});

describe.skipIf(!hasChromium)('overdue rows are marked in lists', () => {
  it.each(WIDTHS)(
    'a task past its deadline and still to do is marked; a finished or upcoming one is not ($name)',
    async (size) => {
      const { context, page } = await asAdmin();
      try {
        await page.setViewportSize(size);
        await page.goto(`${t.origin(sample.host)}/admin/task/tasks`);
        const row = (id: string) =>
          page.locator('#rows tbody tr', { has: page.locator(`a[href="/admin/task/tasks/${id}"]`) });
        const overdue = row(sample.tasks.overdue);
        expect(await overdue.getAttribute('class')).toContain('row-overdue');
        // Said in words beside the date, not by colour alone.
        const flag = overdue.locator('td[data-label="Due"] .flag');
        expect(await flag.textContent()).toBe('Overdue');
        expect(await flag.isVisible()).toBe(true);
        const looks = (locator: Locator) =>
          locator.evaluate((el) => {
            const style = (
              globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }
            ).getComputedStyle(el);
            return style.backgroundColor;
          });
        for (const id of [sample.tasks.finished, sample.tasks.upcoming]) {
          expect(await row(id).getAttribute('class')).toBeNull();
          expect(await row(id).locator('.flag').count()).toBe(0);
          expect(await looks(row(id))).not.toBe(await looks(overdue));
        }
        expect(await seriousViolations(page)).toEqual([]);
      } finally {
        await context.close();
      }
    },
  );
});

describe.skipIf(!hasChromium)('the notification badge', () => {
  it('shows the unread count, and is hidden once nothing is unread, with htmx and after a reload', async () => {
    const { context, page } = await asAdmin();
    try {
      const badge = page.locator('#header-badge');
      await page.goto(`${t.origin(sample.host)}/admin/notification/notifications`);
      const unread = Number(await page.locator('#header-badge .badge').textContent());
      expect(unread).toBeGreaterThan(0);
      expect(await badge.isVisible()).toBe(true);
      await page.getByRole('button', { name: 'Mark all as read' }).click();
      await vi.waitFor(async () => expect(await badge.isHidden()).toBe(true), { timeout: 10_000 });
      await page.goto(`${t.origin(sample.host)}/admin`);
      expect(await badge.isHidden()).toBe(true);
      expect(await page.locator('header .badge').isVisible()).toBe(false);
    } finally {
      await context.close();
    }
  });
});

describe.skipIf(!hasChromium)('the sidebar and the pages agree', () => {
  for (const who of ['customer', 'operator'] as const) {
    it(`each entry opens a page titled as the entry (${who})`, async () => {
      const host = who === 'customer' ? sample.host : OPERATOR_HOST;
      const { context, page } = await (who === 'customer' ? asAdmin : asOperator)();
      try {
        const disagree: string[] = [];
        for (const { label, href } of await sidebarEntries(page)) {
          await page.goto(`${t.origin(host)}${href}`);
          const h1 = ((await page.locator('main h1').textContent()) ?? '').trim();
          const title = (await page.title()).split(' · ', 1)[0];
          if (h1 !== label || title !== label) disagree.push(`${label}: h1 ${h1}, title ${title}`);
        }
        expect(disagree).toEqual([]);
      } finally {
        await context.close();
      }
    }, 120_000);
  }
});
