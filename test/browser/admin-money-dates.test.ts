import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { formatDateTime } from '../../framework/format.ts';
import { OPERATOR_HOST } from '../helpers/app.ts';
import {
  hasChromium,
  seriousViolations,
  signedInSession,
  type SignedInSession,
  useBrowserApp,
  warnNoChromium,
} from './admin-pages-setup.ts';
import { shellSample, WIDTHS, type ShellSample } from './shell-sample.ts';

// Issue 42, point 4: money and dates one way each. Every amount goes through one formatter that
// knows its currency's minor unit (the plans list showed "900" beside "EUR", the subscription page
// "€9.00"); every date a page shows is the one form, "27 Nov 2026, 08:26 UTC", in a <time
// datetime> (lists and detail pages said "2026-12-01 12:00 UTC", the deliveries a raw ISO time).
// The notification's text and the mails use the same formatter (test/modules/auth/mail-dates.test.ts).

warnNoChromium('test/browser/admin-money-dates.test.ts');

const t = useBrowserApp();
let sample: ShellSample;
let asAdmin: SignedInSession;
let asOperator: SignedInSession;

/** The one form of a date a person reads. */
const ONE_FORM = /^\d{1,2} [A-Z][a-z]{2,3} \d{4}, \d{2}:\d{2} UTC$/;
/** Any other form a date took on these pages: ISO 8601, "2026-12-01 12:00", "27/11/2026". */
const OTHER_FORMS = /\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}|\d{1,2}\/\d{1,2}\/\d{4}/;

/** Every <time> of the main part: its words and its datetime. */
const times = (page: Page) =>
  page
    .locator('main time')
    .evaluateAll((els) => els.map((el) => ({ text: (el.textContent ?? '').trim(), iso: el.getAttribute('datetime') })));

/** The dates of a page, each checked: the one form, the ISO instant it says, and no other form in the text. */
async function expectDatesOneWay(page: Page, path: string): Promise<number> {
  const found = await times(page);
  for (const { text, iso } of found) {
    expect(text, path).toMatch(ONE_FORM);
    expect(iso, path).not.toBeNull();
    expect(Number.isNaN(Date.parse(iso!)), path).toBe(false);
    expect(text, path).toBe(formatDateTime(iso!));
  }
  expect((await page.locator('main').textContent()) ?? '', path).not.toMatch(OTHER_FORMS);
  return found.length;
}

beforeAll(async () => {
  if (!hasChromium) return;
  sample = await shellSample(t.app, 'acme');
  asAdmin = await signedInSession(t.browser, t.origin(sample.host), sample.admin);
  asOperator = await signedInSession(t.browser, t.origin(OPERATOR_HOST), sample.operatorAdmin);
}, 120_000);

describe.skipIf(!hasChromium)('amounts: one formatter that knows the currency’s minor unit', () => {
  it.each(WIDTHS)('the plans list and a plan’s page show the amount with its currency ($name)', async (size) => {
    const { context, page } = await asOperator();
    try {
      await page.setViewportSize(size);
      await page.goto(`${t.origin(OPERATOR_HOST)}/admin/billing/plans`);
      const price = (name: string) =>
        page
          .locator('#rows tbody tr', { has: page.getByRole('link', { name, exact: true }) })
          .locator('td[data-label="Price"]');
      expect(await price('Team').textContent()).toBe('€9.00');
      // The yen has no minor unit: 900 is 900 yen.
      expect(await price('Yen').textContent()).toBe('JP¥900');
      expect(await page.locator('#rows th', { hasText: /^Currency$/ }).count()).toBe(0);
      expect(await seriousViolations(page)).toEqual([]);

      await page.goto(`${t.origin(OPERATOR_HOST)}/admin/billing/plans/${sample.plans.eur}`);
      const values = page.locator('dl.values');
      expect(
        await values
          .locator('dt', { hasText: /^Price$/ })
          .locator('xpath=following-sibling::dd[1]')
          .textContent(),
      ).toBe('€9.00');
    } finally {
      await context.close();
    }
  });

  it.each(WIDTHS)('the subscription page says the same amounts the same way ($name)', async (size) => {
    const { context, page } = await asAdmin();
    try {
      await page.setViewportSize(size);
      await page.goto(`${t.origin(sample.host)}/admin/billing/subscription`);
      expect(await page.locator('[data-field=price]').textContent()).toMatch(/^€9\.00\b/);
      expect(await page.locator(`[data-plan="${sample.plans.jpy}"]`).textContent()).toContain('JP¥900 a month');
      expect(await page.locator(`[data-plan="${sample.plans.eur}"]`).textContent()).toContain('€9.00 a month');
    } finally {
      await context.close();
    }
  });
});

describe.skipIf(!hasChromium)('dates: one form, in <time datetime>, on every page that shows one', () => {
  it.each(WIDTHS)('generated lists, detail and edit pages, and the hand-written pages ($name)', async (size) => {
    const { context, page } = await asAdmin();
    try {
      await page.setViewportSize(size);
      const shown: Record<string, number> = {};
      for (const path of [
        '/admin/task/tasks',
        `/admin/task/tasks/${sample.tasks.finished}`,
        `/admin/task/tasks/${sample.tasks.finished}/edit`,
        '/admin/billing/subscription',
        '/admin/file/files',
        '/admin/notification/notifications',
        '/admin/webhook/deliveries',
        `/admin/webhook/endpoints/${sample.endpointId}`,
        '/admin/auth/tokens',
      ]) {
        const answer = await page.goto(`${t.origin(sample.host)}${path}`);
        expect(answer?.status(), path).toBe(200);
        shown[path] = await expectDatesOneWay(page, path);
      }
      // Each of these pages shows dates, so each was checked.
      for (const [path, count] of Object.entries(shown)) expect(count, path).toBeGreaterThan(0);
      // The deliveries' times were raw ISO text; they are words now, the instant kept for machines.
      await page.goto(`${t.origin(sample.host)}/admin/webhook/deliveries`);
      const [first] = await times(page);
      expect(first!.text).toBe(formatDateTime(first!.iso!));
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('a notification’s text says the due date in the same words', async () => {
    const { context, page } = await asAdmin();
    try {
      const login = await t.app
        .http(sample.host)
        .post('/api/v1/auth/login')
        .send({ email: sample.admin.email, password: sample.admin.password });
      const cookie = login.headers['set-cookie']![0]!.split(';', 1)[0]!;
      const made = await t.app
        .http(sample.host)
        .post('/api/v1/task/tasks')
        .set('Cookie', cookie)
        .send({ title: 'Renew the certificate', priority: 'high', deadline: '2027-02-01T09:30:00.000Z' })
        .expect(201);
      await t.app
        .http(sample.host)
        .post(`/api/v1/task/tasks/${made.body.id}/assign`)
        .set('Cookie', cookie)
        .send({ assigneeId: sample.admin.id })
        .expect(200);
      await page.goto(`${t.origin(sample.host)}/admin/notification/notifications`);
      const notice = page.locator('[data-notification]', { hasText: 'Renew the certificate' });
      expect(await notice.textContent()).toContain('due 1 Feb 2027, 09:30 UTC.');
      expect(await notice.textContent()).not.toContain('2027-02-01T09:30');
    } finally {
      await context.close();
    }
  });
});
