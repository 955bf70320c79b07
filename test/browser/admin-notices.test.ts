import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { createCustomer } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import { notify } from '../../modules/notification/notify.ts';
import {
  hasChromium,
  seriousViolations,
  signedInSession,
  type SignedInSession,
  useBrowserApp,
  warnNoChromium,
} from './admin-pages-setup.ts';

// Issue 42, point 1: a notice says its sentence and nothing else. A component is rendered with the
// data it is given only (framework/admin/render.ts), so a page's own `items` (the files, the
// notifications) never turn into list items of its notice.

warnNoChromium('test/browser/admin-notices.test.ts');

const t = useBrowserApp();
const ACME = 'acme.localhost';
const WIDTHS = [
  { name: 'desktop', width: 1280, height: 900 },
  { name: 'phone', width: 390, height: 844 },
];

let acme: TenantRef;
let admin: { id: string; email: string; password: string };
let asAdmin: SignedInSession;

/** The notice's own parts: its sentence, and the list items under it. */
async function notice(page: Page): Promise<{ title: string; items: string[] }> {
  const alert = page.locator('main [role=status]').first();
  return {
    title: ((await alert.locator('strong').textContent()) ?? '').trim(),
    items: await alert.locator('li').allInnerTexts(),
  };
}

describe.skipIf(!hasChromium)('a notice shows its own sentence only', () => {
  beforeAll(async () => {
    acme = await createCustomer(t.app, 'acme', ACME);
    admin = await addUser(t.app, acme, { roles: ['admin'], password: 'acme admin password' });
    asAdmin = await signedInSession(t.browser, t.origin(ACME), admin);
  });

  it.each(WIDTHS)(
    'after an upload, the files page says “The file is uploaded.” and lists no item under it ($name)',
    async (size) => {
      const { context, page } = await asAdmin();
      try {
        await page.setViewportSize(size);
        await page.goto(`${t.origin(ACME)}/admin/file/files`);
        await page
          .getByLabel('File', { exact: true })
          .setInputFiles({ name: `notes-${size.name}.txt`, mimeType: 'text/plain', buffer: Buffer.from('some notes') });
        await Promise.all([
          page.waitForURL(/done=uploaded/),
          page.getByRole('button', { name: 'Upload as private' }).click(),
        ]);
        expect(await page.locator('tr[data-file]').count()).toBeGreaterThan(0);
        expect(await notice(page)).toEqual({ title: 'The file is uploaded.', items: [] });
        expect(await page.locator('main').textContent()).not.toContain('[object Object]');
        expect(await seriousViolations(page)).toEqual([]);
      } finally {
        await context.close();
      }
    },
  );

  it.each(WIDTHS)(
    'after “Mark all as read”, the notifications page says so and lists no item under it ($name)',
    async (size) => {
      for (const title of ['First news', 'Second news'])
        await t.app.services.transactions.run(acme, (ctx) =>
          notify(ctx, { recipientId: admin.id, title, body: `About ${title}`, link: '/admin', email: false }),
        );
      const { context, page } = await asAdmin();
      try {
        await page.setViewportSize(size);
        await page.goto(`${t.origin(ACME)}/admin/notification/notifications`);
        await page.getByRole('button', { name: 'Mark all as read' }).click();
        await vi.waitFor(
          async () => expect((await notice(page)).title).toBe('All your notifications are marked read.'),
          {
            timeout: 10_000,
          },
        );
        expect(await page.locator('[data-notification]').count()).toBeGreaterThan(0);
        expect((await notice(page)).items).toEqual([]);
        expect(await page.locator('main').textContent()).not.toContain('[object Object]');
        expect(await seriousViolations(page)).toEqual([]);
      } finally {
        await context.close();
      }
    },
  );
});
