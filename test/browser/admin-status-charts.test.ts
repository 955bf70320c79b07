import { beforeAll, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { createCustomer } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import {
  browserCookie,
  hasChromium,
  seriousViolations,
  signedInSession,
  type SignedInSession,
  useBrowserApp,
  warnNoChromium,
} from './admin-pages-setup.ts';

// Issue 48, point 7 (charts and CSV): the dashboard draws, for each resource with an enum status,
// a bar chart of its rows per status as SVG from the server, each bar with its status and count
// written as text (axe-clean); each list page has "Download CSV" for its current filters.

warnNoChromium('test/browser/admin-status-charts.test.ts');

const t = useBrowserApp();
const ACME = 'acme.localhost';
let acme: TenantRef;
let admin: { id: string; email: string; password: string };
let asAdmin: SignedInSession;

describe.skipIf(!hasChromium)('status charts and Download CSV', () => {
  beforeAll(async () => {
    acme = await createCustomer(t.app, 'acme', ACME);
    admin = await addUser(t.app, acme, { roles: ['admin'], password: 'acme admin password' });
    // 3 open, 2 in progress, 1 closed; "=HYPERLINK" titles one of the open ones.
    await t.app.services.transactions.run(acme, (ctx) =>
      ctx.db.executeQuery(
        CompiledQuery.raw(
          `insert into tasks (title, status, priority, deadline) values
             ('=HYPERLINK("http://x","y")', 'open', 'high', now() + interval '1 day'),
             ('Second', 'open', 'low', now() + interval '1 day'), ('Third', 'open', 'low', now() + interval '1 day'),
             ('Fourth', 'in_progress', 'high', now() + interval '1 day'),
             ('Fifth', 'in_progress', 'low', now() + interval '1 day'),
             ('Sixth', 'closed', 'low', now() + interval '1 day')`,
        ),
      ),
    );
    asAdmin = await signedInSession(t.browser, t.origin(ACME), admin);
  });

  it('the dashboard draws the tasks per status, each count written beside its bar, axe-clean', async () => {
    const { context, page } = await asAdmin();
    try {
      const chart = page.locator('[data-resource="task.task"] svg.status-chart');
      expect(await chart.getAttribute('aria-label')).toBe('Tasks by status');
      const bars = chart.locator('g[role=listitem]');
      expect(await bars.count()).toBe(5);
      const read = await bars.evaluateAll((gs) =>
        gs.map((g) => [...g.querySelectorAll('text')].map((text) => text.textContent)),
      );
      expect(read).toEqual([
        ['Open', '3'],
        ['Acknowledged', '0'],
        ['In progress', '2'],
        ['Resolved', '0'],
        ['Closed', '1'],
      ]);
      // The longest bar is the most rows'.
      const widths = await chart
        .locator('rect')
        .evaluateAll((rects) => rects.map((r) => Number(r.getAttribute('width'))));
      expect(Math.max(...widths)).toBe(widths[0]);
      expect(widths[1]).toBe(0);
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('a list page links "Download CSV" to the export of its current filters, which downloads', async () => {
    const { context, page } = await asAdmin();
    try {
      await page.goto(`${t.origin(ACME)}/admin/task/tasks?status=eq.open`);
      const link = page.getByRole('link', { name: 'Download CSV' });
      const href = await link.getAttribute('href');
      const url = new URL(href!, t.origin(ACME));
      expect(url.pathname).toBe('/api/v1/task/tasks');
      expect(url.searchParams.get('status')).toBe('eq.open');
      expect(url.searchParams.get('format')).toBe('csv');
      expect(await seriousViolations(page)).toEqual([]);
      const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
      expect(download.suggestedFilename()).toMatch(/^tasks-\d{4}-\d{2}-\d{2}\.csv$/);
      // The same export over HTTP with the browser's session: the three open tasks, the formula prefixed.
      const res = await t.app
        .http(ACME)
        .get(`${url.pathname}${url.search}`)
        .set('Cookie', await browserCookie(context, t.origin(ACME)));
      const lines = res.text.trimEnd().split('\r\n');
      expect(lines).toHaveLength(4);
      expect(res.text).toContain(`"'=HYPERLINK(""http://x"",""y"")"`);
    } finally {
      await context.close();
    }
  });
});
