import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCustomer } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import {
  hasChromium,
  useBrowserApp,
  seriousViolations,
  signedInSession,
  type SignedInSession,
  warnNoChromium,
} from './admin-pages-setup.ts';

warnNoChromium('test/browser/admin-access-tokens.test.ts');

/**
 * The admin shell's "Access tokens" page (issue 35, point 5): a person makes a token with a name,
 * an expiry and the permissions they tick, sees the raw token once, uses it, and revokes it; the
 * page speaks plainly (no codes, no statuses) and has no serious or critical axe violation.
 */

const ACME = 'acme.localhost';

const t = useBrowserApp();
let acme: TenantRef;
let person: { id: string; email: string; password: string };
let asPerson: SignedInSession;

/** What a person reads on the page must not be a machine's words. */
async function expectPlainLanguage(page: Page): Promise<void> {
  const text = await page.locator('main').textContent();
  expect(text).not.toMatch(/\b[A-Z]+(?:_[A-Z]+)+\b/);
  expect(text).not.toMatch(/\b(?:401|403|422|429)\b/);
}

describe.skipIf(!hasChromium)("the admin shell's access tokens page", () => {
  beforeAll(async () => {
    acme = await createCustomer(t.app, 'acme', ACME);
    await t.app.services.transactions.run(acme, (ctx) =>
      ctx.db
        .insertInto('roles')
        .values({ name: 'reporter', permissions: ['task:read', 'content:read'] })
        .execute(),
    );
    person = await addUser(t.app, acme, { roles: ['reporter'], password: 'reporter password' });
    asPerson = await signedInSession(t.browser, t.origin(ACME), person);
  });

  it('makes a token with the ticked permissions, shows it once, lists it, and revokes it', async () => {
    const { context, page } = await asPerson();
    try {
      await page.click('nav >> text=Access tokens');
      expect(new URL(page.url()).pathname).toBe('/admin/auth/tokens');
      // Only what the person holds is offered.
      const offered = await Promise.all(
        (await page.locator('input[name=permissions]').all()).map((box) => box.getAttribute('value')),
      );
      expect(offered.sort()).toEqual(['content:read', 'task:read']);
      expect(await seriousViolations(page)).toEqual([]);
      await expectPlainLanguage(page);

      await page.fill('#token-name', 'reporting script');
      await page.fill('#token-days', '30');
      await page.check('input[name=permissions][value="task:read"]');
      await Promise.all([
        page.waitForLoadState('load'),
        page.click('form[aria-labelledby=new-token-heading] button[type=submit]'),
      ]);
      const raw = await page.inputValue('#token-value');
      expect(raw).toMatch(/^tnt_pat_/);
      expect(await page.locator('tr[data-token]').count()).toBe(1);
      expect(await page.locator('tr[data-token] td').nth(1).textContent()).toBe('task:read');
      expect(await seriousViolations(page)).toEqual([]);
      await expectPlainLanguage(page);

      // The token works through the API, with what was ticked and no more.
      expect((await t.app.http(ACME).get('/api/v1/task/tasks').set('Authorization', `Bearer ${raw}`)).status).toBe(200);
      expect(
        (await t.app.http(ACME).get('/api/v1/content/contents').set('Authorization', `Bearer ${raw}`)).status,
      ).toBe(403);

      // Shown once: the list never carries it again.
      await page.goto(`${t.origin(ACME)}/admin/auth/tokens`);
      expect(await page.content()).not.toContain(raw);

      await Promise.all([page.waitForURL(/revoked=1/), page.click('tr[data-token] button[type=submit]')]);
      expect(await page.locator('tr[data-token]').count()).toBe(0);
      expect(await page.locator('main').textContent()).toContain('Token revoked');
      expect((await t.app.http(ACME).get('/api/v1/task/tasks').set('Authorization', `Bearer ${raw}`)).status).toBe(401);
    } finally {
      await context.close();
    }
  }, 120_000);

  it('refuses an expiry past a year in plain words beside the field, keeping what was typed', async () => {
    const { context, page } = await asPerson();
    try {
      await page.goto(`${t.origin(ACME)}/admin/auth/tokens`);
      await page.fill('#token-name', 'too long');
      // The field's own limit stops a browser; the server's rule is what is tested here.
      await page.locator('#token-days').evaluate((field) => field.removeAttribute('max'));
      await page.fill('#token-days', '400');
      await Promise.all([
        page.waitForLoadState('load'),
        page.click('form[aria-labelledby=new-token-heading] button[type=submit]'),
      ]);
      expect(await page.locator('#token-days-error').textContent()).toBe('A token can last at most 365 days.');
      expect(await page.inputValue('#token-name')).toBe('too long');
      expect(await page.locator('#token-days').getAttribute('aria-invalid')).toBe('true');
      expect(await page.locator('tr[data-token]').count()).toBe(0);
      expect(await seriousViolations(page)).toEqual([]);
      await expectPlainLanguage(page);
    } finally {
      await context.close();
    }
  }, 120_000);
});
