import { beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
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

// Issue 45 point 7 in Chromium: an open task list announces a task a second browser created and
// shows it without a reload; the header's badge counts a notification that arrives meanwhile.
// Each page follows both on one stream (assets/live.js, under the shell's CSP), closed when the
// page is left or an htmx swap changes what it follows; without JavaScript nothing is opened.

warnNoChromium('test/browser/admin-live.test.ts');

const t = useBrowserApp({ role: 'all', startWorker: true });
const HOST = 'live-admin.localhost';
const TASKS = 'task-task-stream';
const NOTIFICATIONS = 'notification-notification-stream';

let tenant: TenantRef;
let first: { id: string; email: string; password: string };
let second: { id: string; email: string; password: string };

/** Every request a page makes to a stream (a path ending in /stream), and whether each has ended. */
function streamsOf(page: Page) {
  const seen: { url: URL; ended: boolean }[] = [];
  let open = 0;
  let mostOpen = 0;
  const isStream = (url: string) => new URL(url).pathname.endsWith('/stream');
  page.on('request', (request) => {
    if (!isStream(request.url())) return;
    seen.push({ url: new URL(request.url()), ended: false });
    mostOpen = Math.max(mostOpen, ++open);
  });
  const end = (request: { url(): string }) => {
    const entry = seen.find((s) => s.url.href === request.url() && !s.ended);
    if (!entry) return;
    entry.ended = true;
    open--;
  };
  page.on('requestfailed', end);
  page.on('requestfinished', end);
  return {
    get seen() {
      return seen;
    },
    get mostOpen() {
      return mostOpen;
    },
  };
}

/** Loads a page and waits until its stream answered (its start position is then fixed). */
async function openWithStream(page: Page, url: string): Promise<void> {
  const answered = page.waitForResponse((r) => new URL(r.url()).pathname === '/admin/_live/stream');
  await page.goto(url);
  expect((await answered).status()).toBe(200);
}

const badgeCount = async (page: Page) => Number(await page.locator('#header-badge .badge').textContent());

type Dom = { document: { activeElement: { id: string } | null; querySelector(selector: string): unknown } };
const focusedId = (page: Page) => page.evaluate(() => (globalThis as unknown as Dom).document.activeElement?.id);
/** htmx's request is over and its answer swapped in (the element that asked carries .htmx-request until then). */
const htmxIdle = (page: Page) =>
  page.waitForFunction(() => (globalThis as unknown as Dom).document.querySelector('.htmx-request') === null);

describe.skipIf(!hasChromium)('live changes in the admin shell', () => {
  beforeAll(async () => {
    tenant = await createCustomer(t.app, 'live-admin', HOST);
    first = await addUser(t.app, tenant, { roles: ['admin'], password: 'first admin password' });
    second = await addUser(t.app, tenant, { roles: ['admin'], password: 'second admin password' });
  });

  it("a second browser's new task is announced on the first's open task list and shown without a reload; the badge counts a new notification", async () => {
    const origin = t.origin(HOST);
    const one = await signInThroughLogin(t.browser, origin, first);
    const two = await signInThroughLogin(t.browser, origin, second);
    try {
      // Counted from the list page on: signing in landed on the dashboard, which has a stream of its own.
      await one.page.goto('about:blank');
      const streams = streamsOf(one.page);
      await openWithStream(one.page, `${origin}/admin/task/tasks`);
      await one.page.evaluate(() => {
        (globalThis as { notReloaded?: boolean }).notReloaded = true;
      });
      const before = await badgeCount(one.page);

      await two.page.goto(`${origin}/admin/task/tasks/new`);
      await two.page.fill('input[name=title]', 'Made in the other browser');
      await two.page.fill('input[name=deadline]', '2031-01-01T09:00');
      await Promise.all([
        two.page.waitForURL(/\/admin\/task\/tasks\/[0-9a-f-]{36}$/),
        two.page.click('#resource-form .actions button[type=submit]:not([name])'),
      ]);
      const taskId = new URL(two.page.url()).pathname.split('/').at(-1)!;

      const notice = one.page.locator('.live-notice');
      await expect
        .poll(() => notice.textContent(), { timeout: 10_000 })
        .toBe('1 new task since this list was shown. Show');
      expect(await one.page.locator('#rows').textContent()).not.toContain('Made in the other browser');
      expect(await seriousViolations(one.page)).toEqual([]);
      await one.page.click('.live-notice button');
      await expect
        .poll(() => one.page.locator('#rows').textContent(), { timeout: 5000 })
        .toContain('Made in the other browser');
      expect(await notice.textContent()).toBe('');
      expect(await focusedId(one.page)).toBe('rows');

      // The second person assigns it to the first: a notification for the first, counted live.
      const assigned = await t.app
        .http(HOST)
        .post(`/api/v1/task/tasks/${taskId}/assign`)
        .set('Cookie', await browserCookie(two.context, origin))
        .send({ assigneeId: first.id });
      expect(assigned.status).toBe(200);
      await expect.poll(() => badgeCount(one.page), { timeout: 10_000 }).toBe(before + 1);
      expect(await one.page.locator('#header-badge').isVisible()).toBe(true);
      expect(await seriousViolations(one.page)).toEqual([]);

      // All of it on the page as loaded, over one stream carrying both lists.
      expect(await one.page.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded)).toBe(true);
      expect(new URL(one.page.url()).pathname).toBe('/admin/task/tasks');
      expect(streams.seen.map((s) => s.url.pathname + s.url.search)).toEqual([
        `/admin/_live/stream?lists=${NOTIFICATIONS},${TASKS}`,
      ]);
      expect(streams.seen[0]!.ended).toBe(false);
    } finally {
      await one.context.close();
      await two.context.close();
    }
  });

  it('a page holds one stream: paging keeps it, an htmx swap that changes what the page follows replaces it, leaving the page closes it', async () => {
    const origin = t.origin(HOST);
    const one = await signInThroughLogin(t.browser, origin, first);
    try {
      // Counted from the list page on: signing in landed on the dashboard, which has a stream of its own.
      await one.page.goto('about:blank');
      const streams = streamsOf(one.page);
      await openWithStream(one.page, `${origin}/admin/task/tasks`);
      // The list page's stream alone (the dashboard's, where signing in landed, closed when it was left).
      await expect.poll(() => t.app.services.live.openStreams, { timeout: 5000 }).toBe(1);

      // Sorting swaps the rows (htmx): the page still follows the same lists on the same stream.
      const rows = one.page.waitForResponse((r) => new URL(r.url()).pathname === '/admin/task/tasks/rows');
      await one.page.click('#rows thead a[hx-get]');
      await rows;
      await htmxIdle(one.page);
      expect(streams.seen).toHaveLength(1);
      expect(streams.seen[0]!.ended).toBe(false);

      // An htmx swap puts the dashboard's main part in place of the list's: the list is no longer
      // followed, so its stream is closed and one for the badge alone is opened.
      const replaced = one.page.waitForResponse((r) => new URL(r.url()).pathname === '/admin/_live/stream');
      await one.page.evaluate(() =>
        (
          globalThis as unknown as { htmx: { ajax(verb: string, path: string, options: object): Promise<void> } }
        ).htmx.ajax('GET', '/admin', { target: 'main', select: 'main', swap: 'outerHTML' }),
      );
      await replaced;
      await expect.poll(() => streams.seen[0]!.ended, { timeout: 5000 }).toBe(true);
      expect(streams.seen.map((s) => s.url.searchParams.get('lists'))).toEqual([
        `${NOTIFICATIONS},${TASKS}`,
        NOTIFICATIONS,
      ]);
      expect(streams.mostOpen).toBe(1);
      await expect.poll(() => t.app.services.live.openStreams, { timeout: 5000 }).toBe(1);

      // Leaving the page closes its stream, on the server too.
      await one.page.goto('about:blank');
      await expect.poll(() => streams.seen[1]!.ended, { timeout: 5000 }).toBe(true);
      await expect.poll(() => t.app.services.live.openStreams, { timeout: 5000 }).toBe(0);
    } finally {
      await one.context.close();
    }
  });

  it('without JavaScript a page opens no stream and shows the list as loaded, with nothing announced', async () => {
    const origin = t.origin(HOST);
    const one = await signInThroughLogin(t.browser, origin, first, { javaScriptEnabled: false });
    try {
      const streams = streamsOf(one.page);
      await one.page.goto(`${origin}/admin/task/tasks`);
      expect(await one.page.locator('#rows').textContent()).toContain('Made in the other browser');
      expect(await one.page.locator('.live-notice').textContent()).toBe('');
      expect(await one.page.locator('.live-notice').isVisible()).toBe(false);
      expect(streams.seen).toEqual([]);
    } finally {
      await one.context.close();
    }
  });
});
