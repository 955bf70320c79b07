import { describe, expect, it } from 'vitest';
import { axeViolations, hasChromium, seriousViolations, warnNoChromium } from './admin-pages-setup.ts';
import { everyPageOnAPhone, layoutFaults, PHONE } from './every-page.ts';

// Every admin page as a customer's administrator on a 390-px phone (every-page.ts; the operator's
// walk is admin-every-page-operator.test.ts, on another worker), and the sign-in page signed out.

warnNoChromium('test/browser/admin-every-page.test.ts');

const { t, sample } = everyPageOnAPhone('customer admin');

describe.skipIf(!hasChromium)('the sign-in page on a 390-px phone', () => {
  it('the sign-in page, signed out', async () => {
    const context = await t.browser.newContext({ viewport: PHONE });
    try {
      const page = await context.newPage();
      await page.goto(`${t.origin(sample().host)}/admin/login`);
      expect(await layoutFaults(page)).toEqual([]);
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('the axe check finds what it is there to find, checked twice in one document and within a part', async () => {
    const context = await t.browser.newContext({ viewport: PHONE });
    try {
      const page = await context.newPage();
      await page.goto(`${t.origin(sample().host)}/admin/login`);
      // An image with no text alternative (critical) and a button with no name (critical), planted in the page.
      await page.evaluate(() => {
        const { document } = globalThis as unknown as {
          document: { querySelector(selector: string): { insertAdjacentHTML(where: string, html: string): void } };
        };
        document
          .querySelector('main')!
          .insertAdjacentHTML('beforeend', '<div id="planted"><img src="/x.png"><button></button></div>');
      });
      const found = (await seriousViolations(page)).map((line) => line.split(':', 1)[0]);
      expect(found).toEqual(expect.arrayContaining(['critical image-alt', 'critical button-name']));
      expect((await seriousViolations(page)).length).toBe(found.length);
      expect((await axeViolations(page, ['#planted'])).map((v) => v.id).sort()).toEqual(['button-name', 'image-alt']);
    } finally {
      await context.close();
    }
  });
});
