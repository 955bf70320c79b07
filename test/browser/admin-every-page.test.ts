import { describe, expect, it } from 'vitest';
import { hasChromium, seriousViolations, warnNoChromium } from './admin-pages-setup.ts';
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
});
