import { beforeAll, describe, expect, it } from 'vitest';
import type { Page, Request } from 'playwright-core';
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
// A browser follows both on one stream whatever its tabs (assets/live.js, under the shell's CSP):
// one tab leads and relays to the others, another takes over when it closes; the stream is
// replaced when an htmx swap changes what is followed and closed when the pages are left; without
// JavaScript nothing is opened.

warnNoChromium('test/browser/admin-live.test.ts');

const t = useBrowserApp({ role: 'all', startWorker: true });
const HOST = 'live-admin.localhost';
const TASKS = 'task-task-stream';
const NOTIFICATIONS = 'notification-notification-stream';

let tenant: TenantRef;
let first: { id: string; email: string; password: string };
let second: { id: string; email: string; password: string };

/**
 * Every request a page makes to a stream (a path ending in /stream), and whether each has ended.
 * A stream counts as open from its answer on: the request of the stream that replaces another is
 * reported before the old one's cancellation is, though the page cancelled that one first.
 */
function streamsOf(page: Page) {
  const seen: { url: URL; ended: boolean; answered: boolean; request: Request }[] = [];
  let open = 0;
  let mostOpen = 0;
  const isStream = (url: string) => new URL(url).pathname.endsWith('/stream');
  page.on('request', (request) => {
    if (!isStream(request.url())) return;
    seen.push({ url: new URL(request.url()), ended: false, answered: false, request });
  });
  page.on('response', (response) => {
    const entry = seen.find((s) => s.request === response.request());
    if (!entry || entry.ended) return;
    entry.answered = true;
    mostOpen = Math.max(mostOpen, ++open);
  });
  const end = (request: Request) => {
    const entry = seen.find((s) => s.request === request);
    if (!entry || entry.ended) return;
    entry.ended = true;
    if (entry.answered) open--;
  };
  page.on('requestfailed', end);
  page.on('requestfinished', end);
  return {
    get seen() {
      return seen.map(({ url, ended }) => ({ url, ended }));
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

  it('a badge read that failed while the browser was offline is read again once it is back online', async () => {
    const origin = t.origin(HOST);
    const one = await signInThroughLogin(t.browser, origin, first);
    try {
      const login = await t.app
        .http(HOST)
        .post('/api/v1/auth/login')
        .send({ email: second.email, password: second.password })
        .expect(200);
      const cookie = login.headers['set-cookie']![0]!.split(';', 1)[0]!;
      const task = await t.app
        .http(HOST)
        .post('/api/v1/task/tasks')
        .set('Cookie', cookie)
        .send({ title: 'Assigned while offline', priority: 'low', deadline: '2031-01-01T09:00:00Z' })
        .expect(201);
      await openWithStream(one.page, `${origin}/admin/task/tasks`);
      const before = await badgeCount(one.page);
      // Chromium's offline emulation keeps the open stream as a rule: the change arrives, the badge's
      // read of it fails. Now and then it drops the stream instead, and the change arrives with the
      // stream's replay once back online: the badge must count it either way, so the wait is bounded.
      await one.context.setOffline(true);
      const failed = one.page
        .waitForEvent('requestfailed', {
          predicate: (r) => new URL(r.url()).pathname === '/admin/_live/badge',
          timeout: 8_000,
        })
        .catch(() => null);
      await t.app
        .http(HOST)
        .post(`/api/v1/task/tasks/${task.body.id}/assign`)
        .set('Cookie', cookie)
        .send({ assigneeId: first.id })
        .expect(200);
      await failed;
      await one.context.setOffline(false);
      await expect.poll(() => badgeCount(one.page), { timeout: 10_000 }).toBe(before + 1);
      expect(await one.page.locator('#header-badge').isVisible()).toBe(true);
    } finally {
      await one.context.close();
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

  it('eight tabs of one session share one stream: every one loads, a navigation in the eighth completes, each is told of a new task, and the server holds one stream', async () => {
    const origin = t.origin(HOST);
    const one = await signInThroughLogin(t.browser, origin, first);
    const two = await signInThroughLogin(t.browser, origin, second);
    // The other browser only makes changes: it keeps no page (and so no stream) open.
    await two.page.goto('about:blank');
    try {
      // Counted from the list page on: signing in landed on the dashboard, which has a stream of its own.
      await one.page.goto('about:blank');
      const streamRequests: string[] = [];
      one.context.on('request', (request) => {
        if (new URL(request.url()).pathname === '/admin/_live/stream') streamRequests.push(request.url());
      });
      await openWithStream(one.page, `${origin}/admin/task/tasks`);
      const tabs = [one.page];
      // A browser allows six connections per host: a stream per tab would leave the seventh none to load with.
      for (let i = 1; i < 8; i++) {
        const tab = await one.context.newPage();
        await tab.goto(`${origin}/admin/task/tasks`, { timeout: 10_000 });
        expect(await tab.locator('h1').textContent()).toBe('Tasks');
        tabs.push(tab);
      }
      await expect.poll(() => t.app.services.live.openStreams, { timeout: 5000 }).toBe(1);
      const eighth = tabs[7]!;
      await eighth.goto(`${origin}/admin/task/tasks/new`, { timeout: 10_000 });
      expect(await eighth.locator('input[name=title]').count()).toBe(1);
      await eighth.goto(`${origin}/admin/task/tasks`, { timeout: 10_000 });

      // Every tab hears of a task made in the other browser, over the one stream.
      const made = await t.app
        .http(HOST)
        .post('/api/v1/task/tasks')
        .set('Cookie', await browserCookie(two.context, origin))
        .send({ title: 'Seen in eight tabs', priority: 'high', deadline: '2031-01-01T00:00:00Z' });
      expect(made.status).toBe(201);
      for (const tab of tabs)
        await expect
          .poll(() => tab.locator('.live-notice').textContent(), { timeout: 10_000 })
          .toBe('1 new task since this list was shown. Show');
      expect(t.app.services.live.openStreams).toBe(1);
      // The first tab's, kept while the others opened, navigated and were told.
      expect(streamRequests).toHaveLength(1);
    } finally {
      await one.context.close();
      await two.context.close();
    }
    await expect.poll(() => t.app.services.live.openStreams, { timeout: 5000 }).toBe(0);
  });

  it('when the tab that holds the stream closes, another takes it over from the last position: a task made in between is announced', async () => {
    const origin = t.origin(HOST);
    const one = await signInThroughLogin(t.browser, origin, first);
    const two = await signInThroughLogin(t.browser, origin, second);
    // The other browser only makes changes: it keeps no page (and so no stream) open.
    await two.page.goto('about:blank');
    try {
      // The first tab leads (it asked for the stream first); the second is told through it.
      const leader = one.page;
      await openWithStream(leader, `${origin}/admin/task/tasks`);
      const follower = await one.context.newPage();
      await follower.goto(`${origin}/admin/task/tasks`);
      const before = await t.app
        .http(HOST)
        .post('/api/v1/task/tasks')
        .set('Cookie', await browserCookie(two.context, origin))
        .send({ title: 'Before the leader left', priority: 'high', deadline: '2031-01-01T00:00:00Z' });
      expect(before.status).toBe(201);
      await expect
        .poll(() => follower.locator('.live-notice').textContent(), { timeout: 10_000 })
        .toBe('1 new task since this list was shown. Show');
      expect(t.app.services.live.openStreams).toBe(1);

      // The follower's stream is held back until a task is made after the leader left.
      let release: () => void = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const takeovers: { lastEventId: string | undefined }[] = [];
      await follower.route('**/admin/_live/stream?*', async (route) => {
        takeovers.push({ lastEventId: route.request().headers()['last-event-id'] });
        await held;
        await route.continue();
      });
      await leader.close();
      await expect.poll(() => takeovers.length, { timeout: 5000 }).toBe(1);
      await expect.poll(() => t.app.services.live.openStreams, { timeout: 5000 }).toBe(0);
      const between = await t.app
        .http(HOST)
        .post('/api/v1/task/tasks')
        .set('Cookie', await browserCookie(two.context, origin))
        .send({ title: 'While no tab held the stream', priority: 'high', deadline: '2031-01-01T00:00:00Z' });
      expect(between.status).toBe(201);
      release();
      // It resumed after the last event the leader relayed: the task made in between is not lost.
      expect(takeovers[0]!.lastEventId).toMatch(/^[0-9]+$/);
      await expect
        .poll(() => follower.locator('.live-notice').textContent(), { timeout: 10_000 })
        .toBe('2 new tasks since this list was shown. Show');
      await expect.poll(() => t.app.services.live.openStreams, { timeout: 5000 }).toBe(1);

      // And the next change reaches it too.
      const after = await t.app
        .http(HOST)
        .post('/api/v1/task/tasks')
        .set('Cookie', await browserCookie(two.context, origin))
        .send({ title: 'After the takeover', priority: 'high', deadline: '2031-01-01T00:00:00Z' });
      expect(after.status).toBe(201);
      await expect
        .poll(() => follower.locator('.live-notice').textContent(), { timeout: 10_000 })
        .toBe('3 new tasks since this list was shown. Show');
    } finally {
      await one.context.close();
      await two.context.close();
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
