import { beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
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

// Issue 48, point 7 (imports): each generated list has an import page that uploads a CSV or NDJSON
// file to the list's import route, then shows the import's progress (rows read, created, refused)
// and each refused row's line with a sentence (the problem's code only in data-code). It works
// without JavaScript (the progress page's Refresh link), and its form carries the form token,
// checked before the file is read.

warnNoChromium('test/browser/admin-import.test.ts');

const t = useBrowserApp({ role: 'all', startWorker: true });
const ACME = 'acme.localhost';
const LIST = '/admin/task/tasks';
let acme: TenantRef;
let admin: { id: string; email: string; password: string };

const deadline = new Date(Date.now() + 7 * 86_400_000).toISOString();

/** Ten task rows after the header (lines 2 to 11); line 4 has no title, line 9 an unknown priority. */
function tenRows(prefix: string): string {
  const lines = ['title,priority,deadline'];
  for (let line = 2; line <= 11; line++) {
    const title = line === 4 ? '' : `${prefix} ${line}`;
    lines.push(`${title},${line === 9 ? 'urgent' : 'high'},${deadline}`);
  }
  return `${lines.join('\r\n')}\r\n`;
}

const tasksTitled = (prefix: string) =>
  t.app.services.transactions.run(acme, async (ctx) => {
    const { rows } = await sql<{
      n: number;
    }>`select count(*)::int as n from tasks where title like ${`${prefix}%`}`.execute(ctx.db);
    return rows[0]!.n;
  });

const importRows = () =>
  t.app.services.transactions.run(acme, async (ctx) => {
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from imports`.execute(ctx.db);
    return rows[0]!.n;
  });

describe.skipIf(!hasChromium)('the import page of a generated list', () => {
  beforeAll(async () => {
    acme = await createCustomer(t.app, 'acme', ACME);
    admin = await addUser(t.app, acme, { roles: ['admin'], password: 'acme admin password' });
  });

  it('imports 10 rows with 2 bad ones without JavaScript: 8 created, the two refused lines in words, axe-clean', async () => {
    let progress = '';
    const { context, page } = await signInThroughLogin(t.browser, t.origin(ACME), admin, { javaScriptEnabled: false });
    try {
      page.setDefaultTimeout(15_000);
      await page.goto(`${t.origin(ACME)}${LIST}`);
      await Promise.all([
        page.waitForURL(`**${LIST}/import`),
        page.getByRole('link', { name: 'Import', exact: true }).click(),
      ]);
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Import tasks');
      const prefix = `browser-${randomUUID()}`;
      await page.getByLabel('File', { exact: true }).setInputFiles({
        name: 'tasks.csv',
        mimeType: 'text/csv',
        buffer: Buffer.from(tenRows(prefix)),
      });
      await Promise.all([
        page.waitForURL(/\/admin\/task\/tasks\/imports\/[0-9a-f-]{36}$/, { timeout: 20_000 }).catch(async (err) => {
          throw new Error(`no progress page: ${page.url()}: ${await page.locator('main').textContent()}`, {
            cause: err,
          });
        }),
        page.getByRole('button', { name: 'Import', exact: true }).click(),
      ]);
      // Without scripts the page is read again with its Refresh link until the worker is through.
      const until = Date.now() + 60_000;
      while ((await page.getByRole('link', { name: 'Refresh' }).count()) > 0) {
        if (Date.now() > until)
          throw new Error(`the import did not finish within a minute: ${await page.locator('main').textContent()}`);
        await page.waitForTimeout(300);
        await page.getByRole('link', { name: 'Refresh' }).click();
      }
      expect(await page.locator('[data-state]').textContent()).toBe('Finished.');
      expect(await page.locator('[data-count=read]').textContent()).toBe('10');
      expect(await page.locator('[data-count=created]').textContent()).toBe('8');
      expect(await page.locator('[data-count=refused]').textContent()).toBe('2');
      const refused = await page
        .locator('tr[data-line]')
        .evaluateAll((rows) =>
          rows.map((r) => [
            r.getAttribute('data-line'),
            r.getAttribute('data-code'),
            r.querySelectorAll('td')[1]!.textContent,
          ]),
        );
      expect(refused).toEqual([
        ['4', 'VALIDATION_FAILED', 'Some values were not accepted. Check Title.'],
        ['9', 'VALIDATION_FAILED', 'Some values were not accepted. Check Priority.'],
      ]);
      // What a person reads names no code.
      expect(await page.locator('main').textContent()).not.toMatch(/VALIDATION_FAILED|\/title|\/priority/);
      expect(await tasksTitled(prefix)).toBe(8);
      progress = page.url();
    } finally {
      await context.close();
    }
    // axe runs in the page: the same two pages, with scripts on.
    const seen = await signInThroughLogin(t.browser, t.origin(ACME), admin);
    try {
      for (const url of [`${t.origin(ACME)}${LIST}/import`, progress]) {
        await seen.page.goto(url);
        expect(await seriousViolations(seen.page), url).toEqual([]);
      }
    } finally {
      await seen.context.close();
    }
  }, 120_000);

  it('checks the form token before it reads the file: a post without it is refused and imports nothing', async () => {
    const { context, page } = await signInThroughLogin(t.browser, t.origin(ACME), admin);
    try {
      const cookie = await browserCookie(context, t.origin(ACME));
      const before = await importRows();
      const refused = await t.app
        .http(ACME)
        .post(`${LIST}/import`)
        .set('Cookie', cookie)
        .attach('file', Buffer.from(tenRows(`forged-${randomUUID()}`)), {
          filename: 'tasks.csv',
          contentType: 'text/csv',
        });
      expect(refused.status).toBe(403);
      expect(refused.text).toContain('data-code="AUTH_CROSS_SITE"');
      expect(await importRows()).toBe(before);
      // The same post with the page's token is taken.
      await page.goto(`${t.origin(ACME)}${LIST}/import`);
      const token = await page.locator('form[enctype="multipart/form-data"] input[name=csrf]').getAttribute('value');
      const taken = await t.app
        .http(ACME)
        .post(`${LIST}/import`)
        .set('Cookie', cookie)
        .field('csrf', token!)
        .attach('file', Buffer.from(tenRows(`signed-${randomUUID()}`)), {
          filename: 'tasks.csv',
          contentType: 'text/csv',
        });
      expect(taken.status).toBe(303);
      expect(taken.headers.location).toMatch(/^\/admin\/task\/tasks\/imports\/[0-9a-f-]{36}$/);
      expect(await importRows()).toBe(before + 1);
    } finally {
      await context.close();
    }
  });
});
