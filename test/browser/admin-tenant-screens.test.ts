import type { Locator, Page } from 'playwright-core';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { createCustomer, signInAs } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import { notify } from '../../modules/notification/notify.ts';
import { axeViolations, hasChromium, signInThroughLogin, useBrowserApp, warnNoChromium } from './admin-pages-setup.ts';

// Issue 35, point 5: the screens a tenant admin looks for, hand-written on the page kit and each
// running the API's own operation: the subscription, the files, the notifications the badge
// opens. Each is driven in Chromium with and without JavaScript, and checked with axe.

warnNoChromium('test/browser/admin-tenant-screens.test.ts');

const MAX_BYTES = 1_000_000;
const t = useBrowserApp({ config: { ...testConfig({ files: { max_bytes: MAX_BYTES } }) } });

/**
 * Serious and critical violations of the page as it stands, one line each. axe runs as a script:
 * a page in a context without JavaScript is opened again, at the same address with the same
 * cookies, in one with it.
 */
async function seriousViolations(page: Page, javaScriptEnabled = true): Promise<string[]> {
  let checked = page;
  const context = javaScriptEnabled ? undefined : await t.browser.newContext();
  if (context) {
    await context.addCookies(await page.context().cookies());
    checked = await context.newPage();
    await checked.goto(page.url());
  }
  try {
    return (await axeViolations(checked))
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
  } finally {
    await context?.close();
  }
}

/** Waits (htmx swaps, navigations) until the locator's text contains, equals, or the count is, what is expected. */
const contains = (locator: Locator, text: string) =>
  vi.waitFor(async () => expect(await locator.textContent()).toContain(text), { timeout: 10_000 });
const hasText = (locator: Locator, text: string) =>
  vi.waitFor(async () => expect((await locator.textContent())?.trim()).toBe(text), { timeout: 10_000 });
const hasCount = (locator: Locator, count: number) =>
  vi.waitFor(async () => expect(await locator.count()).toBe(count), { timeout: 10_000 });

/** What a person reads in the page's main part must not look like the API: codes, statuses, events. */
async function expectPlainText(page: Page): Promise<void> {
  const text = (await page.locator('main').textContent()) ?? '';
  expect(text).not.toMatch(/\b[A-Z][A-Z_]{5,}\b/);
  expect(text).not.toMatch(/\b\d{3} [A-Z]/);
  expect(text).not.toMatch(/\b[a-z]+\.[a-z_]+ed\b/);
}

/** A customer tenant with an administrator (role admin: every permission), signed up fresh per suite. */
async function customer(
  slug: string,
): Promise<{ tenant: TenantRef; host: string; admin: { id: string; email: string; password: string } }> {
  const host = `${slug}.localhost`;
  const tenant = await createCustomer(t.app, slug, host);
  const admin = await addUser(t.app, tenant, {
    roles: ['admin'],
    password: 'admin password here',
    displayName: 'Ada Admin',
  });
  return { tenant, host, admin };
}

/** Signed in through the login form; a step that cannot happen fails in 15 s, naming itself. */
async function signIn(host: string, person: { email: string; password: string }, javaScriptEnabled = true) {
  const signedIn = await signInThroughLogin(t.browser, t.origin(host), person, { javaScriptEnabled });
  signedIn.context.setDefaultTimeout(15_000);
  return signedIn;
}

const sql = <T extends Record<string, unknown>>(text: string, values: unknown[]) =>
  t.app.services.db.pool.query<T>(text, values).then((r) => r.rows);

describe.skipIf(!hasChromium)('the subscription page, /admin/billing/subscription', () => {
  let plans: Record<'team' | 'free' | 'old', string>;

  beforeAll(async () => {
    const operator = (await signInAs(t.app, t.app.operator, ['billing:catalog', 'billing:read'])).cookie;
    const plan = async (code: string, name: string, price: number, active: boolean) => {
      const res = await t.app
        .http()
        .post('/api/v1/billing/plans')
        .set('Cookie', operator)
        .send({ code, name, price, currency: 'EUR', interval: 'month', features: ['webhook.endpoints'], active });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body.id as string;
    };
    plans = {
      team: await plan('team', 'Team', 1900, true),
      free: await plan('free', 'Free', 0, true),
      old: await plan('old', 'Old', 500, false),
    };
  });

  it('without JavaScript: shows the active plans, subscribes, changes plan, cancels at the period end, each through the API’s rules', async () => {
    const { tenant, host, admin } = await customer('billing-screens');
    const { context, page } = await signIn(host, admin, false);
    try {
      await page.goto(`${t.origin(host)}/admin/billing/subscription`);
      await contains(page.locator('main'), 'no subscription yet');
      const offered = await page.locator('[data-plan] h3').allInnerTexts();
      expect(offered.sort()).toEqual(['Free', 'Team']);
      expect(await seriousViolations(page, false)).toEqual([]);

      // A paid plan starts the tenant's one trial.
      await Promise.all([
        page.waitForURL(/done=subscribed/),
        page.getByRole('button', { name: 'Choose this plan: Team' }).click(),
      ]);
      await hasText(page.locator('[data-field=plan]'), 'Team');
      await hasText(page.locator('[data-field=status]'), 'Trial');
      const stored = (
        await sql<{ status: string; period_end: Date; plan_id: string }>(
          'select status, period_end, plan_id from subscriptions where tenant_id = $1',
          [tenant.id],
        )
      )[0]!;
      expect(stored).toMatchObject({ status: 'trial', plan_id: plans.team });
      expect(await page.locator('[data-field=period-end] time').getAttribute('datetime')).toBe(
        stored.period_end.toISOString(),
      );
      await contains(page.locator('[data-field=renewal]'), 'Renews automatically');
      await expectPlainText(page);
      expect(await seriousViolations(page, false)).toEqual([]);

      // Another plan applies at the next renewal.
      await Promise.all([
        page.waitForURL(/done=subscribed/),
        page.getByRole('button', { name: 'Choose this plan: Free' }).click(),
      ]);
      await contains(page.locator('[data-field=pending-plan]'), 'Changes to Free');
      expect(
        (
          await sql<{ pending_plan_id: string }>('select pending_plan_id from subscriptions where tenant_id = $1', [
            tenant.id,
          ])
        )[0]!.pending_plan_id,
      ).toBe(plans.free);

      await Promise.all([
        page.waitForURL(/done=cancelled/),
        page.getByRole('button', { name: 'Cancel at the end of the period' }).click(),
      ]);
      await contains(page.locator('[data-field=renewal]'), 'Cancels at the end of the period');
      expect(
        (
          await sql<{ cancel_at_period_end: boolean; status: string }>(
            'select cancel_at_period_end, status from subscriptions where tenant_id = $1',
            [tenant.id],
          )
        )[0],
      ).toEqual({ cancel_at_period_end: true, status: 'trial' });
      expect(await page.getByRole('button', { name: 'Cancel at the end of the period' }).count()).toBe(0);
    } finally {
      await context.close();
    }
  }, 120_000);

  it('a refusal comes back as the page with a sentence, not a code: a plan withdrawn after the page was shown', async () => {
    const { tenant, host, admin } = await customer('billing-refused');
    const { context, page } = await signIn(host, admin);
    try {
      const operator = (await signInAs(t.app, t.app.operator, ['billing:catalog', 'billing:read'])).cookie;
      const late = await t.app.http().post('/api/v1/billing/plans').set('Cookie', operator).send({
        code: 'late',
        name: 'Late',
        price: 100,
        currency: 'EUR',
        interval: 'month',
        features: [],
        active: true,
      });
      expect(late.status, JSON.stringify(late.body)).toBe(201);
      await page.goto(`${t.origin(host)}/admin/billing/subscription`);
      const withdrawn = await t.app
        .http()
        .patch(`/api/v1/billing/plans/${late.body.id}`)
        .set('Cookie', operator)
        .send({ active: false });
      expect(withdrawn.status, JSON.stringify(withdrawn.body)).toBe(200);
      const [answer] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === 'POST'),
        page.getByRole('button', { name: 'Choose this plan: Late' }).click(),
      ]);
      expect(answer.status()).toBe(422);
      await page.getByRole('alert').waitFor({ state: 'visible' });
      await expectPlainText(page);
      expect(await sql('select 1 from subscriptions where tenant_id = $1', [tenant.id])).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);

  it('a person who may only read billing sees the subscription and no button that would change it', async () => {
    const { tenant, host } = await customer('billing-reader');
    const reader = await addUser(t.app, tenant, { roles: ['billing-reader'], password: 'reader password here' });
    await t.app.services.db.pool.query(
      `insert into roles (tenant_id, name, permissions) values ($1, 'billing-reader', '{billing:read}')`,
      [tenant.id],
    );
    const { context, page } = await signIn(host, reader);
    try {
      await page.goto(`${t.origin(host)}/admin/billing/subscription`);
      await hasText(page.locator('main h1'), 'Subscription');
      expect(await page.locator('main button').count()).toBe(0);
    } finally {
      await context.close();
    }
  }, 60_000);
});

describe.skipIf(!hasChromium)('the files page, /admin/file/files', () => {
  it('with JavaScript: uploads with progress, lists the file’s details, copies its public link, downloads it and deletes it', async () => {
    const { tenant, host, admin } = await customer('files-js');
    const { context, page } = await signIn(host, admin);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.origin(host) });
    try {
      // The progress element's values, kept across the navigation that follows the upload.
      // The bar's value and max (properties the script sets), read every few milliseconds and kept
      // across the navigation that follows the upload.
      await page.addInitScript(`document.addEventListener('DOMContentLoaded', () => {
        const bar = document.querySelector('progress');
        if (bar) setInterval(() => { if (bar.value > 0) sessionStorage.setItem('progress', bar.value + '/' + bar.max); }, 2);
      });`);
      await page.goto(`${t.origin(host)}/admin/file/files`);
      await contains(page.locator('main'), 'No files have been uploaded yet.');
      expect(await seriousViolations(page)).toEqual([]);

      const bytes = Buffer.alloc(600_000, 'a');
      await page
        .getByLabel('File', { exact: true })
        .setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: bytes });
      await Promise.all([
        page.waitForURL(/done=uploaded/),
        page.getByRole('button', { name: 'Upload as public' }).click(),
      ]);
      // The bar moved while the bytes went up: some of the form, out of all of it (the file and its envelope).
      const [sent, total] = (await page.evaluate<string | null>("sessionStorage.getItem('progress')"))!
        .split('/')
        .map(Number);
      expect(total).toBeGreaterThan(bytes.length);
      expect(sent).toBeGreaterThan(0);
      expect(sent).toBeLessThanOrEqual(total!);

      const row = page.locator('tr[data-file]');
      await hasCount(row, 1);
      const fileId = (await row.getAttribute('data-file'))!;
      const cells = await row.locator('td').allInnerTexts();
      expect(cells.slice(0, 5)).toEqual(['notes.txt', '600 kB', 'text/plain', 'Anyone with the link', 'You']);
      const stored = (
        await sql<{ created_at: Date; uploaded_by: string; visibility: string }>(
          'select created_at, uploaded_by, visibility from files where id = $1',
          [fileId],
        )
      )[0]!;
      expect(stored).toMatchObject({ uploaded_by: admin.id, visibility: 'public' });
      expect(await row.locator('time').getAttribute('datetime')).toBe(stored.created_at.toISOString());
      await expectPlainText(page);
      expect(await seriousViolations(page)).toEqual([]);

      // The public link, copied.
      const link = `${t.origin(host)}/api/v1/file/public/${fileId}`;
      expect(await row.getByLabel('Public link of notes.txt').inputValue()).toBe(link);
      await row.getByRole('button', { name: 'Copy link' }).click();
      await hasText(row.getByRole('status'), 'Link copied.');
      expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(link);

      // Download through the API's download route.
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        row.getByRole('link', { name: 'Download notes.txt' }).click(),
      ]);
      expect(download.suggestedFilename()).toBe('notes.txt');

      // Delete: htmx asks first, then posts.
      page.once('dialog', (dialog) => void dialog.accept());
      await Promise.all([page.waitForURL(/done=deleted/), row.getByRole('link', { name: 'Delete notes.txt' }).click()]);
      await contains(page.locator('main'), 'The file is deleted.');
      expect(await sql('select 1 from files where tenant_id = $1', [tenant.id])).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);

  it('without JavaScript: the plain multipart form uploads, the confirmation page deletes, and a refusal is said in words', async () => {
    const { tenant, host, admin } = await customer('files-plain');
    const { context, page } = await signIn(host, admin, false);
    try {
      await page.goto(`${t.origin(host)}/admin/file/files`);
      await page.getByLabel('File', { exact: true }).setInputFiles({
        name: 'report.pdf',
        mimeType: 'application/octet-stream',
        buffer: Buffer.from('not really a pdf'),
      });
      await Promise.all([
        page.waitForURL(/done=uploaded/),
        page.getByRole('button', { name: 'Upload as private' }).click(),
      ]);
      const row = page.locator('tr[data-file]');
      const cells = await row.locator('td').allInnerTexts();
      expect(cells.slice(0, 5)).toEqual([
        'report.pdf',
        '16 bytes',
        'application/octet-stream',
        'Signed-in people',
        'You',
      ]);
      // A private file has no public link to copy.
      expect(await row.getByRole('textbox').count()).toBe(0);

      // Too large for files.max_bytes: the page again, with the reason in words, and nothing kept.
      await page
        .getByLabel('File', { exact: true })
        .setInputFiles({ name: 'big.bin', mimeType: 'application/octet-stream', buffer: Buffer.alloc(MAX_BYTES + 1) });
      const [refused] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === 'POST'),
        page.getByRole('button', { name: 'Upload as private' }).click(),
      ]);
      expect(refused.status()).toBe(413);
      await contains(page.getByRole('alert'), 'larger than the upload limit');
      await expectPlainText(page);
      expect((await sql('select 1 from files where tenant_id = $1', [tenant.id])).length).toBe(1);

      await page.goto(`${t.origin(host)}/admin/file/files`);
      await page.getByRole('link', { name: 'Delete report.pdf' }).click();
      await page.waitForURL(/\/delete$/);
      expect(await seriousViolations(page, false)).toEqual([]);
      await Promise.all([page.waitForURL(/done=deleted/), page.getByRole('button', { name: 'Delete file' }).click()]);
      expect(await sql('select 1 from files where tenant_id = $1', [tenant.id])).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);
});

describe.skipIf(!hasChromium)('the notifications the badge opens, /admin/notification/notifications', () => {
  const send = (tenant: TenantRef, recipientId: string, title: string) =>
    t.app.services.transactions.run(tenant, (ctx) =>
      notify(ctx, { recipientId, title, body: `About ${title}`, link: '/admin', email: false }),
    );

  it('with JavaScript (htmx): the badge leads there; mark one read, then all, and the badge follows', async () => {
    const { tenant, host, admin } = await customer('notes-js');
    for (const title of ['First news', 'Second news', 'Third news']) await send(tenant, admin.id, title);
    const { context, page } = await signIn(host, admin);
    try {
      await hasText(page.locator('#header-badge'), '3');
      await Promise.all([
        page.waitForURL(/\/admin\/notification\/notifications$/),
        page.locator('a.badge-link').click(),
      ]);
      await hasCount(page.locator('[data-notification]'), 3);
      expect(await seriousViolations(page)).toEqual([]);
      await expectPlainText(page);

      await page.getByRole('button', { name: 'Mark as read: Second news' }).click();
      await hasText(page.locator('#header-badge'), '2');
      await hasCount(page.getByRole('button', { name: 'Mark as read: Second news' }), 0);
      // In place: htmx swapped the list, the address did not move.
      expect(new URL(page.url()).pathname).toBe('/admin/notification/notifications');

      await page.getByRole('button', { name: 'Mark all as read' }).click();
      await hasText(page.locator('#header-badge'), '0');
      // At zero the badge is hidden (issue 42, point 5).
      await vi.waitFor(async () => expect(await page.locator('#header-badge').isHidden()).toBe(true));
      await contains(page.locator('main'), 'All your notifications are marked read.');
      expect(
        await sql('select title from notifications where tenant_id = $1 and read_at is null', [tenant.id]),
      ).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);

  it('without JavaScript: the plain forms mark one and all read; another person’s notifications are not shown', async () => {
    const { tenant, host, admin } = await customer('notes-plain');
    const other = await addUser(t.app, tenant, { roles: [] });
    await send(tenant, admin.id, 'Mine');
    await send(tenant, other.id, 'Not mine');
    const { context, page } = await signIn(host, admin, false);
    try {
      await page.goto(`${t.origin(host)}/admin/notification/notifications`);
      expect(await page.locator('[data-notification] h2').allInnerTexts()).toEqual(['Mine']);
      await Promise.all([
        page.waitForURL(/marked=one/),
        page.getByRole('button', { name: 'Mark as read: Mine' }).click(),
      ]);
      await hasText(page.locator('#header-badge'), '0');
      await contains(page.locator('[data-notification]'), 'Read');
      expect(
        await sql('select title from notifications where tenant_id = $1 and read_at is null', [tenant.id]),
      ).toEqual([{ title: 'Not mine' }]);
    } finally {
      await context.close();
    }
  }, 60_000);

  it('an empty list says so once', async () => {
    const { host, admin } = await customer('notes-empty');
    const { context, page } = await signIn(host, admin);
    try {
      await page.goto(`${t.origin(host)}/admin/notification/notifications`);
      await contains(page.locator('main'), 'You have no notifications.');
      expect(await page.getByRole('button', { name: 'Mark all as read' }).count()).toBe(0);
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);
});
