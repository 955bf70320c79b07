import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  hasChromium,
  seriousViolations,
  signInThroughLogin,
  useBrowserApp,
  warnNoChromium,
} from './admin-pages-setup.ts';
import { shellSample, sideways, WIDTHS, type ShellSample } from './shell-sample.ts';

// Issue 42, point 6: the subscription page lays its plans out as the shell's cards (the dashboard's)
// and its current plan as the shell's description list, where it had nested browser-default
// bullet lists and an unstyled list of details.

warnNoChromium('test/browser/admin-subscription-page.test.ts');

const t = useBrowserApp();
let sample: ShellSample;

beforeAll(async () => {
  if (!hasChromium) return;
  sample = await shellSample(t.app, 'acme');
}, 120_000);

/** The main part's lists that show the browser's own bullets or numbers. */
const defaultBullets = (page: Page) =>
  page.locator('main ul, main ol').evaluateAll((lists) => {
    const { getComputedStyle } = globalThis as unknown as {
      getComputedStyle(e: unknown): { listStyleType: string; display: string };
    };
    return lists
      .filter((list) => getComputedStyle(list).display !== 'none')
      .filter((list) => getComputedStyle(list).listStyleType !== 'none')
      .map((list) => list.outerHTML.slice(0, 80));
  });

/** How an element is laid out: its box and the style the shell's components give. */
const boxOf = (page: Page, selector: string) =>
  page.locator(selector).evaluateAll((els) => {
    const { getComputedStyle } = globalThis as unknown as {
      getComputedStyle(e: unknown): { borderTopStyle: string; display: string };
    };
    return els.map((el) => {
      const rect = (
        el as unknown as { getBoundingClientRect(): { top: number; left: number; width: number } }
      ).getBoundingClientRect();
      const style = getComputedStyle(el);
      return {
        top: Math.round(rect.top),
        left: Math.round(rect.left),
        width: rect.width,
        border: style.borderTopStyle,
        display: style.display,
      };
    });
  });

describe.skipIf(!hasChromium)('the subscription page uses the shell’s cards and lists', () => {
  it.each(WIDTHS)(
    'plans as cards, the current plan as a description list, no browser bullets ($name)',
    async (size) => {
      const { context, page } = await signInThroughLogin(t.browser, t.origin(sample.host), sample.admin);
      try {
        await page.setViewportSize(size);
        await page.goto(`${t.origin(sample.host)}/admin/billing/subscription`);
        expect(await defaultBullets(page)).toEqual([]);

        // Each plan is a card of the shell: bordered, in the card grid.
        const cards = await boxOf(page, '[data-plan]');
        expect(cards).toHaveLength(2);
        for (const card of cards) expect(card.border).toBe('solid');
        expect(await page.locator('.card-grid > [data-plan].card').count()).toBe(2);
        // Side by side on a desktop, one under the other on a phone.
        if (size.name === 'desktop') expect(cards[0]!.top).toBe(cards[1]!.top);
        else expect(cards[0]!.left).toBe(cards[1]!.left);
        // The current plan says so; the other offers its button.
        const current = page.locator(`[data-plan="${sample.plans.eur}"]`);
        expect(await current.textContent()).toContain('Your current plan');
        expect(
          await page
            .locator(`[data-plan="${sample.plans.jpy}"]`)
            .getByRole('button', { name: 'Choose this plan: Yen' })
            .isVisible(),
        ).toBe(true);
        // What a plan includes: a list of the shell's, no bullets, read as the plan's.
        expect(await current.getByRole('list', { name: 'Included in Team' }).locator('li').allTextContents()).toEqual([
          // The sample plan's features are declared names now (issue 47): the page shows what each gives.
          'Webhook endpoints: the tenant’s events pushed to its own URLs',
          'Public files: an upload anyone may download by its link',
        ]);

        // The subscription itself: the shell's description list, a grid of label and value.
        const details = page.locator('section[aria-labelledby="current-heading"] dl');
        expect(await details.getAttribute('class')).toBe('values');
        expect((await boxOf(page, 'section[aria-labelledby="current-heading"] dl'))[0]!.display).toBe('grid');
        expect(await page.locator('[data-field=plan]').textContent()).toBe('Team');

        expect(await sideways(page)).toBe(0);
        expect(await seriousViolations(page)).toEqual([]);
      } finally {
        await context.close();
      }
    },
  );
});
