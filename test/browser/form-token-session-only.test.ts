import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import { CHROMIUM, closeContexts, workerChromium } from '../helpers/chromium.ts';

// Issue 27, point 1. `app_session` lasts 30 days; `app_csrf` is a browser-session cookie. After a
// browser restart, after single sign-on or after signing in through the API, a browser holds the
// session cookie and nothing else: its first form post on each admin page must pass.

let app: TestApp;
let acme: TenantRef;
let browser: Browser;
let origin: string;
let admin: { email: string; password: string };
/** The session cookie a browser restart leaves, taken from a sign-in through the login form. */
let sessionOnly: { name: string; value: string; url: string };
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`These tests drive Chromium at ${CHROMIUM}: apt-get install chromium (.ci/run does it as root)`);
  app = await startTestApp();
  acme = await createCustomer(app, 'acme', 'acme.example.com');
  admin = await addUser(app, acme, { roles: ['admin'], password: 'admin password here' });
  await app.web!.listen({ host: '127.0.0.1', port: 0 });
  origin = `http://acme.example.com:${(app.web!.server.address() as AddressInfo).port}`;
  browser = await workerChromium();

  // Signed in as a person does, through the form: the browser then holds both cookies.
  const first = await fresh();
  const page = await first.newPage();
  await page.goto(`${origin}/admin/login`);
  await page.getByLabel('Email address').fill(admin.email);
  await page.getByLabel('Password').fill(admin.password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL(`${origin}/admin`);
  const cookies = await first.cookies(origin);
  expect(cookies.map((c) => c.name).sort()).toEqual(['app_csrf', 'app_session']);
  // What survives a restart: the persistent cookie (it has an expiry), not the browser-session one.
  expect(cookies.find((c) => c.name === 'app_csrf')!.expires).toBe(-1);
  const session = cookies.find((c) => c.name === 'app_session')!;
  expect(session.expires).toBeGreaterThan(Date.now() / 1000);
  sessionOnly = { name: session.name, value: session.value, url: origin };
}, 60_000);
afterAll(async () => {
  for (const context of contexts) await context.close().catch(() => undefined);
  if (browser) await closeContexts(browser);
  await app?.close();
});

async function fresh(): Promise<BrowserContext> {
  const context = await browser.newContext();
  contexts.push(context);
  return context;
}

/** A browser after a restart: a new context holding the session cookie alone. */
async function restarted(): Promise<Page> {
  const context = await fresh();
  await context.addCookies([sessionOnly]);
  expect((await context.cookies(origin)).map((c) => c.name)).toEqual(['app_session']);
  return context.newPage();
}

/**
 * Clicks and returns the status of the form post that follows: the first try's answer. An
 * accepted post is 200 (htmx follows the 303 and navigates); a refused token would be 403.
 */
async function firstPost(page: Page, path: string, click: () => Promise<void>): Promise<number> {
  const answered = page.waitForResponse((res) => res.request().method() === 'POST');
  await click();
  const response = await answered;
  expect(new URL(response.url()).pathname).toBe(path);
  return response.status();
}

async function taskRow(title: string) {
  return app.services.transactions.run(
    acme,
    async (ctx) =>
      (
        await sql<{
          id: string;
          title: string;
          status: string;
          resolution: string | null;
          deleted_at: Date | null;
        }>`select id, title, status, resolution, deleted_at from tasks where title = ${title}`.execute(ctx.db)
      ).rows[0],
  );
}

/** A task made through the API, for the steps that need one. */
async function newTask(title: string): Promise<string> {
  const session = await signInAs(app, acme, ['*']);
  const res = await app
    .http('acme.example.com')
    .post('/api/v1/task/tasks')
    .set('Cookie', session.cookie)
    .send({ title, priority: 'low', deadline: '2031-01-01T00:00:00Z' });
  expect(res.status).toBe(201);
  return res.body.id;
}

describe('in Chromium, a browser holding only its session cookie posts every admin form on the first try', () => {
  it('create: /admin/task/tasks/new, in a browser signed in through the API', async () => {
    // Signing in through the API leaves the session cookie alone as well.
    const context = await fresh();
    const page = await context.newPage();
    await page.goto(`${origin}/health`);
    const status = await page.evaluate(
      async (who) => {
        const res = await fetch('/api/v1/auth/login', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(who),
        });
        return res.status;
      },
      { email: admin.email, password: admin.password },
    );
    expect(status).toBe(200);
    expect((await context.cookies(origin)).map((c) => c.name)).toEqual(['app_session']);

    await page.goto(`${origin}/admin/task/tasks/new`);
    await page.getByLabel('Title').fill('Made after a restart');
    await page.getByLabel('Priority').selectOption('high');
    await page.getByLabel('Due').fill('2031-02-03T04:05');
    expect(
      await firstPost(page, '/admin/task/tasks/new', () => page.getByRole('button', { name: 'Create task' }).click()),
    ).toBe(200);
    await page.waitForURL(/\/admin\/task\/tasks\/[0-9a-f-]{36}$/);
    expect(await taskRow('Made after a restart')).toBeDefined();
  });

  it('edit: /admin/task/tasks/<id>/edit', async () => {
    const taskId = await newTask('To edit');
    const page = await restarted();
    await page.goto(`${origin}/admin/task/tasks/${taskId}/edit`);
    await page.getByLabel('Title').fill('Edited after a restart');
    expect(
      await firstPost(page, `/admin/task/tasks/${taskId}/edit`, () =>
        page.getByRole('button', { name: 'Save changes' }).click(),
      ),
    ).toBe(200);
    await page.waitForURL(`${origin}/admin/task/tasks/${taskId}`);
    expect((await taskRow('Edited after a restart'))?.id).toBe(taskId);
  });

  it('a command: /admin/task/tasks/<id>/resolve', async () => {
    const taskId = await newTask('To resolve');
    const page = await restarted();
    await page.goto(`${origin}/admin/task/tasks/${taskId}/resolve`);
    await page.getByLabel('Resolution').fill('Resolved after a restart');
    expect(
      await firstPost(page, `/admin/task/tasks/${taskId}/resolve`, () =>
        page.getByRole('button', { name: 'Resolve' }).click(),
      ),
    ).toBe(200);
    await page.waitForURL(`${origin}/admin/task/tasks/${taskId}`);
    expect((await taskRow('To resolve'))?.resolution).toBe('Resolved after a restart');
  });

  it('delete: the detail page’s Delete, confirmed', async () => {
    const taskId = await newTask('To delete');
    const page = await restarted();
    page.once('dialog', (dialog) => void dialog.accept());
    await page.goto(`${origin}/admin/task/tasks/${taskId}`);
    expect(
      await firstPost(page, `/admin/task/tasks/${taskId}/delete`, () =>
        page.getByRole('link', { name: 'Delete' }).click(),
      ),
    ).toBe(200);
    await page.waitForURL(`${origin}/admin/task/tasks`);
    expect((await taskRow('To delete'))?.deleted_at).toBeInstanceOf(Date);
  });
});
