import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { CompiledQuery } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import { closeContexts, hasChromium, warnNoChromium, workerChromium } from '../helpers/chromium.ts';

// The admin shell in a real browser: Chromium resolves every name to this machine, and the
// service answers acme.example.com on its port.
const present = hasChromium;
warnNoChromium('the admin shell browser tests');

let app: TestApp;
let acme: TenantRef;
let browser: Browser;
let origin: string;
let admin: { email: string; password: string };
let member: { email: string; password: string };
/** The administrator's signed-in context, with JavaScript (htmx) and without. */
let adminContext: BrowserContext;
let plainContext: BrowserContext;

beforeAll(async () => {
  if (!present) return;
  app = await startTestApp();
  acme = await createCustomer(app, 'acme', 'acme.example.com');
  admin = await addUser(app, acme, { roles: ['admin'], password: 'admin password here' });
  member = await addUser(app, acme, { roles: ['member'], password: 'member password here' });
  await app.web!.listen({ host: '127.0.0.1', port: 0 });
  origin = `http://acme.example.com:${(app.web!.server.address() as AddressInfo).port}`;
  browser = await workerChromium();
  adminContext = await browser.newContext();
  await signIn(await adminContext.newPage(), admin, '/admin/task/tasks');
  plainContext = await browser.newContext({ javaScriptEnabled: false });
  await signIn(await plainContext.newPage(), admin, '/admin/content/contents');
}, 60_000);
afterAll(async () => {
  if (browser) await closeContexts(browser);
  await app?.close();
});

/** Signs in through /admin/login as a person would: the page asked for, the redirect, the form. */
async function signIn(page: Page, who: { email: string; password: string }, path: string): Promise<Page> {
  await page.goto(`${origin}${path}`);
  await page.getByLabel('Email address').fill(who.email);
  await page.getByLabel('Password').fill(who.password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL((url) => url.pathname !== '/admin/login');
  return page;
}

const sidebarOf = async (page: Page) => page.locator('nav[aria-label="Main"] a').allTextContents();

describe.skipIf(!present)('Admin shell in Chromium: signing in', () => {
  it('sends an anonymous browser to /admin/login?next=<path>, and back there after signing in', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${origin}/admin/task/tasks?sort=-title`);
    expect(new URL(page.url()).pathname).toBe('/admin/login');
    expect(new URL(page.url()).searchParams.get('next')).toBe('/admin/task/tasks?sort=-title');
    await page.getByLabel('Email address').fill(admin.email);
    await page.getByLabel('Password').fill(admin.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL(`${origin}/admin/task/tasks?sort=-title`);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Tasks');
    await context.close();
  });

  it('refuses open redirects: next=//evil.example, https://evil.example and /\\evil.example land on /admin', async () => {
    for (const next of ['//evil.example', 'https://evil.example', '/\\evil.example']) {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(`${origin}/admin/login?next=${encodeURIComponent(next)}`);
      await page.getByLabel('Email address').fill(admin.email);
      await page.getByLabel('Password').fill(admin.password);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.waitForURL((url) => url.pathname !== '/admin/login');
      const landed = new URL(page.url());
      expect(`${landed.host}${landed.pathname}`, next).toBe(`${new URL(origin).host}/admin`);
      await context.close();
    }
  });

  it('shows one error for a wrong password and keeps the address typed', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${origin}/admin/login`);
    await page.getByLabel('Email address').fill(admin.email);
    await page.getByLabel('Password').fill('wrong password');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('The address or the password is wrong.');
    await expect(page.getByLabel('Email address').inputValue()).resolves.toBe(admin.email);
    await context.close();
  });

  it('signs out from the header', async () => {
    const context = await browser.newContext();
    const page = await signIn(await context.newPage(), admin, '/admin/task/tasks');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${origin}/admin/login`);
    await page.goto(`${origin}/admin/task/tasks`);
    expect(new URL(page.url()).pathname).toBe('/admin/login');
    await context.close();
  });
});

describe.skipIf(!present)('Admin shell in Chromium: the sidebar shows what the routes allow', () => {
  it('differs between an admin and a member', async () => {
    const page = await adminContext.newPage();
    await page.goto(`${origin}/admin/task/tasks`);
    expect(await sidebarOf(page)).toEqual(expect.arrayContaining(['Users', 'Pages and posts', 'Tasks', 'Plans']));
    expect(await sidebarOf(page)).not.toContain('Tenants');

    const context = await browser.newContext();
    const memberPage = await signIn(await context.newPage(), member, '/admin/task/tasks');
    // A member holds no permission: the task list itself is refused, and the sidebar holds only
    // what every signed-in person has (their own access tokens).
    await expect(memberPage.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Not allowed');
    expect(await sidebarOf(memberPage)).toEqual(['Access tokens']);
    await context.close();

    const reader = await signInAs(app, acme, ['task:read']);
    const readerContext = await browser.newContext();
    await readerContext.addCookies([{ name: reader.cookie.split('=')[0]!, value: reader.rawSessionId, url: origin }]);
    const readerPage = await readerContext.newPage();
    await readerPage.goto(`${origin}/admin/task/tasks`);
    expect(await sidebarOf(readerPage)).toEqual(['Tasks', 'Access tokens']);
    // Reading only: no button to create.
    expect(await readerPage.getByRole('link', { name: 'New task' }).count()).toBe(0);
    await readerContext.close();
  });
});

describe.skipIf(!present)('Admin shell in Chromium: the shell’s files are kept by the browser', () => {
  it('after the first admin page of a context, the next page asks for none of /admin/_assets/', async () => {
    const reader = await signInAs(app, acme, ['task:read', 'content:read']);
    const context = await browser.newContext();
    await context.addCookies([{ name: reader.cookie.split('=')[0]!, value: reader.rawSessionId, url: origin }]);
    try {
      const page = await context.newPage();
      // The files the page uses (playwright's request event fires for a file taken from the cache
      // too) and the requests for them that reach the server.
      const used: string[] = [];
      page.on('request', (request) => {
        if (new URL(request.url()).pathname.startsWith('/admin/_assets/')) used.push(request.url());
      });
      const served: string[] = [];
      const count = (request: IncomingMessage) => {
        if (request.url?.startsWith('/admin/_assets/')) served.push(request.url);
      };
      app.web!.server.on('request', count);
      try {
        await page.goto(`${origin}/admin/task/tasks`);
        await page.waitForFunction('typeof window.htmx === "object"');
        // The first page of the context loads its style sheet and scripts from the server (the icon
        // too, where the browser fetches one: the headless shell does not).
        const paths = (urls: string[]) => [...new Set(urls.map((url) => new URL(url, origin).pathname))].sort();
        const loaded = ['/admin/_assets/admin.css', '/admin/_assets/htmx.min.js', '/admin/_assets/live.js'];
        expect(paths(used)).toEqual(expect.arrayContaining(loaded));
        expect(paths(served)).toEqual(expect.arrayContaining(loaded));
        used.length = 0;
        served.length = 0;
        await page.goto(`${origin}/admin/content/contents`);
        await page.waitForFunction('typeof window.htmx === "object"');
        // The next page uses the same files, its style sheet applied, and asks the server for none.
        expect(paths(used)).toEqual(expect.arrayContaining(loaded));
        expect(await page.evaluate('document.styleSheets[0].cssRules.length')).toBeGreaterThan(10);
        expect(served).toEqual([]);
      } finally {
        app.web!.server.off('request', count);
      }
    } finally {
      await context.close();
    }
  });
});

describe.skipIf(!present)('Admin shell in Chromium: generated pages', () => {
  it('visits every generated page of tasks and content', async () => {
    const http = app.http('acme.example.com');
    const session = await signInAs(app, acme, ['*']);
    const task = await http
      .post('/api/v1/task/tasks')
      .set('Cookie', session.cookie)
      .send({ title: 'Visit me', priority: 'medium', deadline: '2031-01-01T00:00:00Z' });
    const content = await http
      .post('/api/v1/content/contents')
      .set('Cookie', session.cookie)
      .send({ slug: 'visit-me', title: 'Visit me', kind: 'page', body: '# Visit' });
    const page = await adminContext.newPage();
    const visits = [
      ['/admin/task/tasks', 'Tasks'],
      ['/admin/task/tasks/rows', null],
      ['/admin/task/tasks/new', 'New task'],
      [`/admin/task/tasks/${task.body.id}`, 'Task: Visit me'],
      [`/admin/task/tasks/${task.body.id}/edit`, 'Edit task: Visit me'],
      [`/admin/task/tasks/${task.body.id}/delete`, 'Delete task: Visit me'],
      [`/admin/task/tasks/${task.body.id}/assign`, 'Assign: Visit me'],
      [`/admin/task/tasks/${task.body.id}/resolve`, 'Resolve: Visit me'],
      [`/admin/task/tasks/${task.body.id}/check-sla`, 'Check the deadline: Visit me'],
      // Named as people name them (issue 42, point 10), not by the API's plural.
      ['/admin/content/contents', 'Pages and posts'],
      ['/admin/content/contents/rows', null],
      ['/admin/content/contents/new', 'New page or post'],
      [`/admin/content/contents/${content.body.id}`, 'Page or post: Visit me'],
      [`/admin/content/contents/${content.body.id}/edit`, 'Edit page or post: Visit me'],
      [`/admin/content/contents/${content.body.id}/delete`, 'Delete page or post: Visit me'],
      [`/admin/content/contents/${content.body.id}/publish`, 'Publish: Visit me'],
      [`/admin/content/contents/${content.body.id}/unpublish`, 'Unpublish: Visit me'],
      [`/admin/content/contents/${content.body.id}/archive`, 'Archive: Visit me'],
    ] as const;
    for (const [path, heading] of visits) {
      const response = await page.goto(`${origin}${path}`);
      expect(response?.status(), path).toBe(200);
      if (heading) await expect(page.getByRole('heading', { level: 1 }).textContent(), path).resolves.toBe(heading);
      else await expect(page.locator('#rows table').count(), path).resolves.toBe(1);
    }
  });

  it('creates, edits, runs a command and deletes through the forms, without JavaScript', async () => {
    const page = await plainContext.newPage();
    await page.goto(`${origin}/admin/content/contents/new`);
    await page.getByLabel('Slug').fill('made-in-a-form');
    await page.getByLabel('Title').fill('Made in a form');
    await page.getByLabel('Kind').selectOption('post');
    await page.getByLabel('Text').fill('# Hello');
    await page.getByRole('button', { name: 'Create page or post' }).click();
    await page.waitForURL(/\/admin\/content\/contents\/[0-9a-f-]{36}$/);
    const detail = page.url();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Page or post: Made in a form');

    await page.getByRole('link', { name: 'Edit' }).click();
    await page.getByLabel('Title').fill('Edited in a form');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.waitForURL(detail);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Page or post: Edited in a form');

    await page.getByRole('link', { name: 'Publish', exact: true }).click();
    await page.getByRole('button', { name: 'Publish', exact: true }).click();
    await page.waitForURL(detail);
    // The status reads as its label.
    await expect(page.locator('dl.values').textContent()).resolves.toContain('Published');

    // Without JavaScript the delete button opens the confirmation page.
    await page.getByRole('link', { name: 'Delete' }).click();
    await page.getByRole('button', { name: 'Delete page or post' }).click();
    await page.waitForURL(`${origin}/admin/content/contents`);
    expect(await page.locator('#rows').textContent()).not.toContain('Edited in a form');
  });

  it('creates a task, runs its resolve command and deletes it after an htmx confirmation dialog', async () => {
    const page = await adminContext.newPage();
    await page.goto(`${origin}/admin/task/tasks/new`);
    await page.getByLabel('Title').fill('Through htmx');
    await page.getByLabel('Priority').selectOption('high');
    await page.getByLabel('Due').fill('2031-02-03T04:05');
    await page.getByRole('button', { name: 'Create task' }).click();
    await page.waitForURL(/\/admin\/task\/tasks\/[0-9a-f-]{36}$/);
    const detail = page.url();
    await expect(page.locator('dl.values').textContent()).resolves.toContain('3 Feb 2031, 04:05 UTC');
    // The date is one <time> whose datetime says the instant for machines.
    expect(await page.locator('dl.values time', { hasText: '3 Feb 2031, 04:05 UTC' }).getAttribute('datetime')).toBe(
      '2031-02-03T04:05:00.000Z',
    );

    await page.getByRole('link', { name: 'Resolve' }).click();
    await page.getByLabel('Resolution').fill('Done in the browser');
    await page.getByRole('button', { name: 'Resolve' }).click();
    await page.waitForURL(detail);
    await expect(page.locator('dl.values').textContent()).resolves.toContain('Done in the browser');

    let question = '';
    page.once('dialog', (dialog) => {
      question = dialog.message();
      void dialog.accept();
    });
    await page.getByRole('link', { name: 'Delete' }).click();
    await page.waitForURL(`${origin}/admin/task/tasks`);
    expect(question).toBe('Delete this task?');
    expect(await page.locator('#rows').textContent()).not.toContain('Through htmx');
  });

  it('shows an inline validation error beside its field (htmx swaps the form), and without JavaScript too', async () => {
    for (const context of [adminContext, plainContext]) {
      const page = await context.newPage();
      await page.goto(`${origin}/admin/content/contents/new`);
      await page.getByLabel('Slug').fill('Not A Slug!');
      await page.getByLabel('Title').fill('Kept');
      await page.getByLabel('Kind').selectOption('page');
      await page.getByLabel('Text').fill('x');
      await page.getByRole('button', { name: 'Create page or post' }).click();
      const error = page.locator('#field-slug-error');
      await error.waitFor();
      expect((await error.textContent())?.length).toBeGreaterThan(0);
      await expect(page.getByLabel('Slug').getAttribute('aria-invalid')).resolves.toBe('true');
      await expect(page.getByLabel('Title').inputValue()).resolves.toBe('Kept');
      expect(new URL(page.url()).pathname).toBe('/admin/content/contents/new');
    }
  });

  it('a form sent twice before its answer (a double click, Enter pressed twice) creates one row', async () => {
    const count = async (title: string) =>
      (
        await app.services.transactions.run(acme, (tx) =>
          tx.db.executeQuery<{ n: number }>(
            CompiledQuery.raw('select count(*)::int as n from tasks where title = $1', [title]),
          ),
        )
      ).rows[0]!.n;
    const page = await adminContext.newPage();
    let posts = 0;
    page.on('request', (request) => {
      if (request.method() === 'POST' && new URL(request.url()).pathname === '/admin/task/tasks/new') posts++;
    });
    const button = "document.querySelector('#resource-form button[type=submit]')";
    for (const [title, twice] of [
      ['Clicked twice', () => page.evaluate(`${button}.click(); ${button}.click();`)],
      ['Entered twice', () => page.keyboard.press('Enter').then(() => page.keyboard.press('Enter'))],
    ] as const) {
      await page.goto(`${origin}/admin/task/tasks/new`);
      await page.getByLabel('Due').fill('2031-02-03T04:05');
      await page.getByLabel('Title').fill(title);
      posts = 0;
      await Promise.all([page.waitForURL(/\/admin\/task\/tasks\/[0-9a-f-]{36}$/), twice()]);
      // The second submit, queued behind the first (htmx's default), would be sent as its answer came.
      expect({ posts, rows: await count(title) }, title).toEqual({ posts: 1, rows: 1 });
    }
  });

  it('a refusal under htmx (404: row deleted, 403: role gone) replaces the page, not nested where asked', async () => {
    // htmx 4 swaps a 4xx answer as it swaps a 200 one: the shell's error page, a whole page, would
    // otherwise land inside the form or the Delete link that asked (two headers, two sidebars).
    const session = await signInAs(app, acme, ['*']);
    const api = app.http('acme.example.com');
    const aTask = async (title: string) =>
      (
        await api
          .post('/api/v1/task/tasks')
          .set('Cookie', session.cookie)
          .send({ title, priority: 'low', deadline: '2031-01-01T00:00:00Z' })
          .expect(201)
      ).body.id as string;
    /** The refusal's page alone (one header, main, sidebar), titled by its heading, at the address that asked. */
    const shownAlone = async (page: Page, heading: string, path: string, said: string) => {
      await page.locator('main h1', { hasText: heading }).waitFor();
      // The page's code is a string: the tests are type-checked without the DOM's types.
      const shown = await page.evaluate(`({
        headers: document.querySelectorAll('header.site-header').length,
        mains: document.querySelectorAll('main').length,
        sidebars: document.querySelectorAll('nav.sidebar').length,
        title: document.title,
        path: location.pathname,
        said: document.querySelector('main [role=alert]')?.textContent?.trim(),
      })`);
      expect(shown).toEqual({ headers: 1, mains: 1, sidebars: 1, title: `${heading} · Tenantry`, path, said });
    };
    const gone = 'This record does not exist, or it was deleted.';
    const page = await adminContext.newPage();
    const edited = await aTask('Edited after its deletion');
    await page.goto(`${origin}/admin/task/tasks/${edited}/edit`);
    await api.delete(`/api/v1/task/tasks/${edited}`).set('Cookie', session.cookie).expect(204);
    await page.getByLabel('Title').fill('Renamed');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await shownAlone(page, 'Not found', `/admin/task/tasks/${edited}/edit`, gone);

    const deleted = await aTask('Deleted twice');
    await page.goto(`${origin}/admin/task/tasks/${deleted}`);
    await api.delete(`/api/v1/task/tasks/${deleted}`).set('Cookie', session.cookie).expect(204);
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('link', { name: 'Delete' }).click();
    await shownAlone(page, 'Not found', `/admin/task/tasks/${deleted}`, gone);

    const helper = await addUser(app, acme, { roles: ['admin'], password: 'helper password here' });
    const context = await browser.newContext();
    const helped = await signIn(await context.newPage(), helper, '/admin');
    const kept = await aTask('Kept from a role taken away');
    await helped.goto(`${origin}/admin/task/tasks/${kept}`);
    await app.services.transactions.run(acme, (tx) =>
      tx.db.executeQuery(CompiledQuery.raw(`update users set roles = '{}' where id = $1`, [helper.id])),
    );
    helped.once('dialog', (dialog) => void dialog.accept());
    await helped.getByRole('link', { name: 'Delete' }).click();
    const refused = 'Your roles do not allow this. Ask an administrator for access.';
    await shownAlone(helped, 'Not allowed', `/admin/task/tasks/${kept}`, refused);
    await api.get(`/api/v1/task/tasks/${kept}`).set('Cookie', session.cookie).expect(200);
    await context.close();
  });

  it('sorts and pages in place with htmx, pushing the address', async () => {
    const session = await signInAs(app, acme, ['*']);
    for (const title of ['Sort A', 'Sort B', 'Sort C']) {
      await app
        .http('acme.example.com')
        .post('/api/v1/task/tasks')
        .set('Cookie', session.cookie)
        .send({ title, priority: 'low', deadline: '2031-01-01T00:00:00Z' });
    }
    const page = await adminContext.newPage();
    await page.goto(`${origin}/admin/task/tasks?limit=2`);
    await page.evaluate(() => ((globalThis as unknown as { marker: number }).marker = 1));
    await page.getByRole('link', { name: 'Title' }).click();
    await page.waitForURL(`${origin}/admin/task/tasks?sort=title&limit=2`);
    await expect(page.locator('th[aria-sort="ascending"]').count()).resolves.toBe(1);
    await page.getByRole('link', { name: 'Next page' }).click();
    await page.waitForURL(`${origin}/admin/task/tasks?sort=title&limit=2&offset=2`);
    // No page load happened: the marker set on the first page is still there.
    await expect(page.evaluate(() => (globalThis as unknown as { marker?: number }).marker)).resolves.toBe(1);
  });

  it('shows a customer the plans with no write buttons', async () => {
    const operatorAdmin = await signInAs(app, app.operator, ['*']);
    const plan = await app.http().post('/api/v1/billing/plans').set('Cookie', operatorAdmin.cookie).send({
      code: 'silver',
      name: 'Silver',
      price: 500,
      currency: 'EUR',
      interval: 'month',
      features: [],
      active: true,
    });
    expect(plan.status).toBe(201);
    const page = await adminContext.newPage();
    await page.goto(`${origin}/admin/billing/plans`);
    await expect(page.locator('#rows').textContent()).resolves.toContain('Silver');
    expect(await page.locator('main').getByRole('link', { name: /new/i }).count()).toBe(0);
    await page.getByRole('link', { name: 'Silver' }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Plan: Silver');
    expect(await page.locator('main .button').count()).toBe(0);
  });
});
