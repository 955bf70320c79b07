import { beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext } from 'playwright-core';
import { createCustomer } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import {
  browserCookie,
  hasChromium,
  seriousViolations,
  signInThroughLogin,
  useBrowserApp,
  warnNoChromium,
} from './admin-pages-setup.ts';

warnNoChromium('test/browser/admin-history.test.ts');

/**
 * Issue 46, point 6, in Chromium: a record's History section says what changed in words, a Restore
 * asks first (htmx's confirmation, or the confirmation page without JavaScript) and brings the
 * version back; the section, the confirmation and the Activity page are axe-clean.
 */
const t = useBrowserApp({ role: 'all', startWorker: true });
const ACME = 'acme.localhost';
let acme: TenantRef;
let withScripts: BrowserContext;
let withoutScripts: BrowserContext;
let cookie: string;

async function aTask(title: string): Promise<string> {
  const http = t.app.http(ACME);
  const created = await http
    .post('/api/v1/task/tasks')
    .set('Cookie', cookie)
    .send({ title, priority: 'low', deadline: '2031-12-01T09:00:00Z', description: 'One\nTwo\nThree' });
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  const patched = await http
    .patch(`/api/v1/task/tasks/${id}`)
    .set('Cookie', cookie)
    .send({ title: `${title}, renamed`, deadline: '2031-12-05T09:00:00Z', description: 'One\nTwo, longer\nThree' });
  expect(patched.status).toBe(200);
  return id;
}

describe.skipIf(!hasChromium)('history in the admin shell', () => {
  beforeAll(async () => {
    acme = await createCustomer(t.app, 'acme', ACME);
    const admin = await addUser(t.app, acme, { roles: ['admin'], password: 'acme admin password' });
    ({ context: withScripts } = await signInThroughLogin(t.browser, t.origin(ACME), admin));
    ({ context: withoutScripts } = await signInThroughLogin(t.browser, t.origin(ACME), admin, {
      javaScriptEnabled: false,
    }));
    cookie = await browserCookie(withScripts, t.origin(ACME));
  });

  it('shows the History section in words and restores a version after htmx asks; axe-clean', async () => {
    const id = await aTask('Order the parts');
    const page = await withScripts.newPage();
    await page.goto(`${t.origin(ACME)}/admin/task/tasks/${id}`);
    const history = page.getByRole('region', { name: 'History' });
    await expect(history.textContent()).resolves.toContain(
      'Due moved from 1 Dec 2031, 09:00 UTC to 5 Dec 2031, 09:00 UTC',
    );
    await expect(history.textContent()).resolves.toContain(
      'Title changed from Order the parts to Order the parts, renamed',
    );
    await expect(history.locator('ins').textContent()).resolves.toContain('Two, longer');
    expect(await seriousViolations(page)).toEqual([]);

    let question = '';
    page.once('dialog', (dialog) => {
      question = dialog.message();
      void dialog.accept();
    });
    await history.getByRole('link', { name: 'Restore this version' }).click();
    // The record's page shows dates as people read them (the one date formatter, framework/format.ts).
    await page.locator('dl.values', { hasText: '1 Dec 2031, 09:00 UTC' }).waitFor();
    expect(question).toMatch(/^Restore this task as it was after the change of .+\?$/);
    await expect(page.locator('dl.values').textContent()).resolves.toContain('Order the parts');
    await expect(history.locator('.revision').first().textContent()).resolves.toContain('restored an earlier version');
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('restores through the confirmation page without JavaScript; the page is axe-clean', async () => {
    const id = await aTask('Book the room');
    const page = await withoutScripts.newPage();
    await page.goto(`${t.origin(ACME)}/admin/task/tasks/${id}`);
    await page.getByRole('region', { name: 'History' }).getByRole('link', { name: 'Restore this version' }).click();
    await page.waitForURL(/\/restore\?revision=/);
    // axe runs in the page's scripts: the same confirmation page, checked where scripts run.
    const checked = await withScripts.newPage();
    await checked.goto(page.url());
    expect(await seriousViolations(checked)).toEqual([]);
    await page.getByRole('button', { name: 'Restore' }).click();
    await page.waitForURL(`${t.origin(ACME)}/admin/task/tasks/${id}`);
    await expect(page.locator('dl.values').textContent()).resolves.toContain('Book the room');
  });

  it('lists the Activity for an admin, with its filters, axe-clean', async () => {
    const page = await withScripts.newPage();
    await page.goto(`${t.origin(ACME)}/admin/audit/activity`);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Activity');
    await expect(page.getByLabel('Kind of change').isVisible()).resolves.toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
  });
});
