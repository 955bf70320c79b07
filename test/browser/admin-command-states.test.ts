import type { Page } from 'playwright-core';
import { CompiledQuery } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCustomer } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import {
  hasChromium,
  useBrowserApp,
  seriousViolations,
  signInThroughLogin,
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

const api = (method: 'get' | 'post' | 'patch' | 'delete', path: string, body?: object) => {
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

  it('a refusal under htmx (404 on a deleted row, 403 on a row action) replaces the page, never nested where it was asked', async () => {
    // htmx 4 swaps a 4xx answer as it swaps a 200 one: the shell's error page, a whole page, would
    // otherwise land inside the form or the Delete link that asked (two headers, two sidebars).
    const alone = async (page: Page, heading: string, path: string) => {
      await page.locator('main h1', { hasText: heading }).waitFor();
      return page
        .evaluate(() => ({
          headers: document.querySelectorAll('header.site-header').length,
          mains: document.querySelectorAll('main').length,
          sidebars: document.querySelectorAll('nav.sidebar').length,
          title: document.title,
          path: location.pathname,
          said: document.querySelector('main [role=alert]')?.textContent?.trim(),
        }))
        .then((shown) => ({ ...shown, expected: path }));
    };
    const aTask = async (title: string) =>
      (
        await api('post', '/api/v1/task/tasks', { title, priority: 'low', deadline: '2099-01-01T00:00:00Z' }).expect(
          201,
        )
      ).body.id as string;
    const gone = 'This record does not exist, or it was deleted.';
    const { context, page } = await asAdmin();
    try {
      const edited = await aTask('Edited after its deletion');
      await page.goto(`${t.origin(ACME)}/admin/task/tasks/${edited}/edit`);
      await api('delete', `/api/v1/task/tasks/${edited}`).expect(204);
      await page.fill('input[name=title]', 'Renamed');
      await page.click('#resource-form .actions button[type=submit]:not([name])');
      const path = `/admin/task/tasks/${edited}/edit`;
      expect(await alone(page, 'Not found', path)).toEqual({
        headers: 1,
        mains: 1,
        sidebars: 1,
        title: 'Not found · Tenantry',
        path,
        said: gone,
        expected: path,
      });

      const deleted = await aTask('Deleted twice');
      await page.goto(`${t.origin(ACME)}/admin/task/tasks/${deleted}`);
      await api('delete', `/api/v1/task/tasks/${deleted}`).expect(204);
      page.once('dialog', (dialog) => void dialog.accept());
      await page.locator('.page-head .actions a', { hasText: 'Delete' }).click();
      const detail = `/admin/task/tasks/${deleted}`;
      expect(await alone(page, 'Not found', detail)).toMatchObject({ headers: 1, mains: 1, sidebars: 1, said: gone });
    } finally {
      await context.close();
    }

    const helper = await addUser(t.app, acme, { roles: ['admin'], password: 'acme helper password' });
    const signedIn = await signInThroughLogin(t.browser, t.origin(ACME), helper);
    try {
      const kept = await aTask('Kept from a role taken away');
      await signedIn.page.goto(`${t.origin(ACME)}/admin/task/tasks/${kept}`);
      await t.app.services.transactions.run(acme, (tx) =>
        tx.db.executeQuery(CompiledQuery.raw(`update users set roles = '{}' where id = $1`, [helper.id])),
      );
      signedIn.page.once('dialog', (dialog) => void dialog.accept());
      await signedIn.page.locator('.page-head .actions a', { hasText: 'Delete' }).click();
      expect(await alone(signedIn.page, 'Not allowed', `/admin/task/tasks/${kept}`)).toMatchObject({
        headers: 1,
        mains: 1,
        title: 'Not allowed · Tenantry',
        path: `/admin/task/tasks/${kept}`,
        said: 'Your roles do not allow this. Ask an administrator for access.',
      });
      await api('get', `/api/v1/task/tasks/${kept}`).expect(200);
    } finally {
      await signedIn.context.close();
    }
  });
});
