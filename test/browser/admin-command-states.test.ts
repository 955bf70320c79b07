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

warnNoChromium('test/browser/admin-command-states.test.ts');

/**
 * Issue 35, point 4: a detail page offers a command only where the declared state table lets it
 * act (a resolved task offers neither Assign nor Resolve; published content offers Unpublish and
 * Archive, not Publish), and the new-task form asks no status (a create may take only one).
 */

const t = useBrowserApp();
let acme: TenantRef;
let admin: { id: string; email: string; password: string };
let cookie: string;
let asAdmin: SignedInSession;

const ACME = 'acme.localhost';

const api = (method: 'get' | 'post' | 'patch', path: string, body?: object) => {
  const req = t.app.http(ACME)[method](path).set('Cookie', cookie);
  return body ? req.send(body) : req;
};

/** The commands a detail page links to, by their path's last segment. */
async function offered(page: Page, path: string): Promise<string[]> {
  await page.goto(`${t.origin(ACME)}${path}`);
  const hrefs = await page.$$eval('.page-head .actions a', (links) => links.map((a) => a.getAttribute('href') ?? ''));
  return hrefs
    .filter((href) => href.startsWith(`${path}/`) && !/\/(edit|delete)$/.test(href))
    .map((href) => href.slice(path.length + 1))
    .sort();
}

describe.skipIf(!hasChromium)('command buttons follow the declared states', () => {
  beforeAll(async () => {
    acme = await createCustomer(t.app, 'acme', ACME);
    admin = await addUser(t.app, acme, { roles: ['admin'], password: 'acme admin password' });
    const login = await t.app
      .http(ACME)
      .post('/api/v1/auth/login')
      .send({ email: admin.email, password: admin.password });
    cookie = login.headers['set-cookie']![0]!.split(';', 1)[0]!;
    asAdmin = await signedInSession(t.browser, t.origin(ACME), admin);
  });

  it('a task: open offers Assign and Resolve; resolved and closed offer neither (Check the deadline stays)', async () => {
    const open = (
      await api('post', '/api/v1/task/tasks', {
        title: 'Open one',
        priority: 'low',
        deadline: '2099-01-01T00:00:00Z',
      }).expect(201)
    ).body.id;
    const resolved = (
      await api('post', '/api/v1/task/tasks', {
        title: 'Resolved one',
        priority: 'low',
        deadline: '2099-01-01T00:00:00Z',
      }).expect(201)
    ).body.id;
    await api('post', `/api/v1/task/tasks/${resolved}/resolve`, { resolution: 'done' }).expect(200);
    const closed = (
      await api('post', '/api/v1/task/tasks', {
        title: 'Closed one',
        priority: 'low',
        deadline: '2099-01-01T00:00:00Z',
      }).expect(201)
    ).body.id;
    await api('post', `/api/v1/task/tasks/${closed}/resolve`, { resolution: 'done' }).expect(200);
    await api('patch', `/api/v1/task/tasks/${closed}`, { status: 'closed' }).expect(200);
    const { context, page } = await asAdmin();
    try {
      expect(await offered(page, `/admin/task/tasks/${open}`)).toEqual(['assign', 'check-sla', 'resolve']);
      expect(await offered(page, `/admin/task/tasks/${resolved}`)).toEqual(['check-sla']);
      expect(await seriousViolations(page)).toEqual([]);
      expect(await offered(page, `/admin/task/tasks/${closed}`)).toEqual(['check-sla']);
    } finally {
      await context.close();
    }
  });

  it('content: a draft offers Publish and Archive, published Unpublish and Archive, archived Unpublish', async () => {
    const id = (
      await api('post', '/api/v1/content/contents', {
        slug: 'states-page',
        title: 'States',
        kind: 'page',
        body: 'x',
      }).expect(201)
    ).body.id;
    const path = `/admin/content/contents/${id}`;
    const { context, page } = await asAdmin();
    try {
      expect(await offered(page, path)).toEqual(['archive', 'publish']);
      await api('post', `/api/v1/content/contents/${id}/publish`).expect(200);
      expect(await offered(page, path)).toEqual(['archive', 'unpublish']);
      expect(await seriousViolations(page)).toEqual([]);
      await api('post', `/api/v1/content/contents/${id}/archive`).expect(200);
      expect(await offered(page, path)).toEqual(['unpublish']);
    } finally {
      await context.close();
    }
  });

  it('the new-task form asks no status: the one a create may take is sent without a choice (issue 42, point 2)', async () => {
    const { context, page } = await asAdmin();
    try {
      await page.goto(`${t.origin(ACME)}/admin/task/tasks/new`);
      // Open is the only status a create may take: a select with one choice asks nothing.
      expect(await page.locator('[name=status]').count()).toBe(0);
      expect(await seriousViolations(page)).toEqual([]);
      await page.fill('input[name=title]', 'Made through the form');
      await page.fill('input[name=deadline]', '2099-01-01T09:00');
      await Promise.all([
        page.waitForURL(/\/admin\/task\/tasks\/[0-9a-f-]{36}$/),
        page.click('#resource-form .actions button[type=submit]:not([name])'),
      ]);
      const id = new URL(page.url()).pathname.split('/').pop()!;
      expect((await api('get', `/api/v1/task/tasks/${id}`)).body.status).toBe('open');
    } finally {
      await context.close();
    }
  });
});
