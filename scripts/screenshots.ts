/**
 * npm run screenshots: PNGs of the admin shell's main pages under docs/screenshots/, for
 * docs/admin.md: each at 1280 px wide, and the main ones also on a 390-px-wide phone
 * (`<name>-mobile.png`). Starts the service on a throw-away embedded PostgreSQL with sample data,
 * signs in through /admin/login in Chromium like a person, and photographs each page.
 *
 *   npm run screenshots                 # Chromium at /usr/bin/chromium
 *   CHROMIUM=/path/to/chrome npm run screenshots
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import { request as httpRequest } from 'node:http';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ROOT, buildApp, type App } from '../framework/app.ts';
import { ensureDatabase, startEmbeddedPostgres, type EmbeddedServer } from '../framework/db/embedded.ts';
import { validateConfig } from '../framework/config/load.ts';
import type { TenantRef } from '../framework/context/tenant.ts';
import { createTenant } from '../framework/tenancy/create-tenant.ts';
import { allModules } from '../modules/index.ts';
import { usersService } from '../modules/user/users-service.ts';
import { hashPassword } from '../modules/user/passwords.ts';
import { setRole } from '../modules/auth/roles.routes.ts';
import { notify } from '../modules/notification/notify.ts';
import { CHROMIUM, CHROMIUM_ARGS } from '../test/helpers/chromium.ts';

const OUT = resolve(ROOT, 'docs/screenshots');
const PASSWORD = 'a sample password';
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => done(port));
    });
  });
}

/** A signed-in person of the tenant, with a password, holding these roles. */
async function person(
  app: App,
  tenant: TenantRef,
  email: string,
  displayName: string,
  roles: string[],
): Promise<string> {
  const hash = await hashPassword(PASSWORD);
  return app.services.transactions.run(tenant, async (tx) => {
    const user = await usersService.invite(tx, { email, displayName, roles });
    await usersService.setPasswordHash(tx, user.id, hash, { activate: true });
    return user.id;
  });
}

/** Sample rows through the entities' own operations, as the API would write them. */
async function sampleData(app: App, operator: TenantRef, acme: TenantRef): Promise<void> {
  const { registry, transactions, operations } = app.services;
  await transactions.run(operator, async (tx) => {
    await createTenant(tx, app.services, { slug: 'globex', name: 'Globex Corporation', host: 'globex.localhost' });
    const plans = operations.of('billing.plan');
    for (const [code, name, price] of [
      ['starter', 'Starter', 900],
      ['team', 'Team', 2900],
      ['business', 'Business', 9900],
    ] as const) {
      await plans.create(tx, {
        code,
        name,
        price,
        currency: 'EUR',
        interval: 'month',
        features: ['webhook.endpoints', 'file.public_links'],
        active: true,
      });
    }
  });
  const ada = await person(app, acme, 'ada@acme.localhost', 'Ada Admin', ['admin']);
  await person(app, acme, 'max@acme.localhost', 'Max Member', ['member']);
  // Acting as Ada: content records its author from the acting user.
  await transactions.run(
    acme,
    async (tx) => {
      await setRole(tx, registry, 'support', ['content:read', 'task:read', 'task:update', 'user:read']);
      const contents = operations.of('content.content');
      for (const [slug, title, kind] of [
        ['welcome', 'Welcome to Acme', 'page'],
        ['pricing', 'Pricing', 'page'],
        ['spring-news', 'Spring news', 'post'],
      ] as const) {
        await contents.create(tx, { slug, title, kind, body: `# ${title}\n\nSample text.` });
      }
    },
    { actorId: ada },
  );
  // One transaction each: rows made in one share its time, and the list (by createdAt) would mix them.
  const tasks = operations.of('task.task');
  const day = 24 * 3600_000;
  for (const [title, priority, days] of TASKS) {
    await transactions.run(acme, (tx) =>
      tasks.create(tx, {
        title,
        priority,
        deadline: new Date(Date.now() + days * day).toISOString(),
        description: `${title}.`,
      }),
    );
  }
}

const TASKS: [string, string, number][] = [
  ['Call the customer back', 'high', 1],
  ['Renew the TLS certificate', 'critical', 3],
  ['Write the onboarding guide', 'medium', 10],
  ['Review the March invoices', 'low', 20],
  ['Plan the quarterly review', 'medium', 30],
  ...Array.from({ length: 19 }, (_, i): [string, string, number] => [
    `Follow up on ticket #${4100 + i}`,
    ['low', 'medium', 'high'][i % 3]!,
    2 + i,
  ]),
];

async function signIn(page: Page, origin: string, email: string): Promise<void> {
  await page.goto(`${origin}/admin/login`);
  await page.fill('input[name=email]', email);
  await page.fill('input[name=password]', PASSWORD);
  await Promise.all([page.waitForURL(`${origin}/admin`), page.click('main form button[type=submit]')]);
}

/** A signed-in page of its own, at a width: the desktop's and the phone's shots keep separate sessions. */
async function signedInPage(
  browser: Browser,
  origin: string,
  email: string,
  viewport: { width: number; height: number },
): Promise<Page> {
  const context = await browser.newContext({ viewport, deviceScaleFactor: 1 });
  const page = await context.newPage();
  await signIn(page, origin, email);
  return page;
}

async function shoot(page: Page, name: string, url?: string): Promise<void> {
  if (url) await page.goto(url);
  await page.waitForLoadState('networkidle');
  // A phone's shot is its screen, from the top (a whole long page at 390 px is too narrow to read in the docs).
  if (name.endsWith('-mobile'))
    await page.evaluate(() => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0));
  await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: !name.endsWith('-mobile') });
  process.stdout.write(`docs/screenshots/${name}.png  ${page.url()}\n`);
}

/**
 * An API request as the signed-in browser would send it (its cookies), to 127.0.0.1 with the
 * tenant's Host: the sample data a page needs that only a request can make (a subscription's first
 * charge runs outside any transaction, a personal access token shows its secret once).
 */
async function api(
  page: Page,
  origin: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const url = new URL(origin);
  const cookie = (await page.context().cookies(origin)).map((c) => `${c.name}=${c.value}`).join('; ');
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((done, fail) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: url.port,
        method,
        path,
        headers: { host: url.host, cookie, ...(payload ? { 'content-type': 'application/json' } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          done({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null });
        });
      },
    );
    req.on('error', fail);
    req.end(payload);
  });
}

/** Uploads a file through the files page's form, as a person would (skipped when the page is not there). */
async function upload(
  page: Page,
  origin: string,
  name: string,
  mimeType: string,
  text: string,
  button: string,
): Promise<void> {
  const response = await page.goto(`${origin}/admin/file/files`);
  if (response?.status() !== 200) return;
  await page.setInputFiles('input[type=file]', { name, mimeType, buffer: Buffer.from(text) });
  await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: button }).click()]);
  await page.waitForLoadState('networkidle');
}

/** The edit form posted with an empty title, as the service answers it (the browser's own checks removed). */
async function editWithError(page: Page, origin: string, taskPath: string): Promise<void> {
  await page.goto(`${origin}${taskPath}/edit`);
  await page.fill('[name=title]', '');
  await page.$$eval('[required], [minlength]', (els) =>
    els.forEach((el) => {
      el.removeAttribute('required');
      el.removeAttribute('minlength');
    }),
  );
  await Promise.all([page.waitForLoadState('load'), page.click('main form button[type=submit]')]);
  await page.waitForSelector('[aria-invalid=true]');
}

async function main(): Promise<void> {
  if (!existsSync(CHROMIUM))
    throw new Error(`Chromium not found at ${CHROMIUM}: apt-get install chromium, or set CHROMIUM`);
  mkdirSync(OUT, { recursive: true });
  const dir = mkdtempSync(join(tmpdir(), 'tenantry-screenshots-'));
  chmodSync(dir, 0o755);
  let embedded: EmbeddedServer | undefined;
  let app: App | undefined;
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  try {
    embedded = await startEmbeddedPostgres({ dir: join(dir, 'data'), port: await freePort() });
    const databaseUrl = await ensureDatabase(embedded.adminUrl, 'tenantry');
    const port = await freePort();
    const config = validateConfig(
      { server: { public_host: 'operator.localhost', port, log_level: 'silent' }, files: { dir: join(dir, 'files') } },
      'screenshots',
    );
    app = await buildApp({ config, modules: allModules, databaseUrl, role: 'web' });
    await app.web!.listen({ host: '127.0.0.1', port });
    const { rows } = await app.services.db.pool.query<{ id: string; slug: string }>(
      'select id, slug from tenants where is_operator',
    );
    const operator: TenantRef = { id: rows[0]!.id, slug: rows[0]!.slug, isOperator: true };
    const acme = await app.services.transactions.run(operator, (tx) =>
      createTenant(tx, app!.services, { slug: 'acme', name: 'Acme Inc.', host: 'acme.localhost' }),
    );
    await person(app, operator, 'olivia@operator.localhost', 'Olivia Operator', ['admin']);
    await sampleData(app, operator, acme);

    const acmeOrigin = `http://acme.localhost:${port}`;
    const operatorOrigin = `http://operator.localhost:${port}`;
    const page = await signedInPage(browser, acmeOrigin, 'ada@acme.localhost', DESKTOP);

    // Sample data made through requests and forms: a subscription, files, a token, notifications.
    const plans = (await api(page, acmeOrigin, 'GET', '/api/v1/billing/plans')).body as {
      items: { id: string; code: string }[];
    };
    const team = plans.items.find((p) => p.code === 'team');
    if (team) await api(page, acmeOrigin, 'POST', '/api/v1/billing/subscription/subscribe', { planId: team.id });
    await api(page, acmeOrigin, 'POST', '/api/v1/auth/tokens', {
      name: 'Nightly export',
      expiresInDays: 30,
      permissions: ['task:read'],
    });
    await upload(
      page,
      acmeOrigin,
      'price-list-2026.txt',
      'text/plain',
      'Starter 9 EUR\nTeam 29 EUR\n',
      'Upload as public',
    );
    await upload(
      page,
      acmeOrigin,
      'minutes-march.txt',
      'text/plain',
      'Minutes of the March meeting.\n',
      'Upload as private',
    );
    const tasks = (await api(page, acmeOrigin, 'GET', '/api/v1/task/tasks?limit=3')).body as {
      items: { id: string; title: string }[];
    };
    const ada = (await api(page, acmeOrigin, 'GET', '/api/v1/auth/me')).body as { userId?: string; id?: string };
    const adaId = ada.userId ?? ada.id;
    if (adaId) {
      for (const task of tasks.items) {
        await app.services.transactions.run(acme, (tx) =>
          notify(tx, {
            recipientId: adaId,
            title: `Task assigned to you: ${task.title}`,
            body: 'Due soon.',
            link: `/admin/task/tasks/${task.id}`,
            email: false,
          }),
        );
      }
    }

    // The login page, and a refused sign-in (it stays on /admin/login).
    const anonymous = await browser.newContext({ viewport: DESKTOP, deviceScaleFactor: 1 });
    const loginPage = await anonymous.newPage();
    await shoot(loginPage, 'login', `${acmeOrigin}/admin/login`);
    await loginPage.fill('input[name=email]', 'ada@acme.localhost');
    await loginPage.fill('input[name=password]', 'not the password');
    await Promise.all([loginPage.waitForLoadState('load'), loginPage.click('main form button[type=submit]')]);
    await shoot(loginPage, 'login-refused');
    await anonymous.close();

    await shoot(page, 'dashboard', `${acmeOrigin}/admin`);
    await shoot(page, 'list', `${acmeOrigin}/admin/task/tasks`);
    const firstTask = await page.getAttribute('main table tbody tr a', 'href');
    if (firstTask) {
      await shoot(page, 'detail', `${acmeOrigin}${firstTask}`);
      await shoot(page, 'command-assign', `${acmeOrigin}${firstTask}/assign`);
      await editWithError(page, acmeOrigin, firstTask);
      await shoot(page, 'edit-with-error');
    }
    await shoot(page, 'content', `${acmeOrigin}/admin/content/contents`);
    await shoot(page, 'roles', `${acmeOrigin}/admin/auth/roles/support`);
    await shoot(page, 'health', `${acmeOrigin}/admin/health`);
    await shoot(page, 'gallery', `${acmeOrigin}/admin/_gallery`);
    // The screens issue 35 adds, each when its page is there.
    for (const [name, path] of [
      ['subscription', '/admin/billing/subscription'],
      ['files', '/admin/file/files'],
      ['notifications', '/admin/notification/notifications'],
      ['tokens', '/admin/auth/tokens'],
      ['webhooks', '/admin/webhook/endpoints'],
    ] as const) {
      const response = await page.goto(`${acmeOrigin}${path}`);
      if (response?.status() === 200) await shoot(page, name);
      else process.stdout.write(`(no ${name} screen: ${path} answered ${response?.status()})\n`);
    }

    const operatorPage = await signedInPage(browser, operatorOrigin, 'olivia@operator.localhost', DESKTOP);
    await shoot(operatorPage, 'tenants', `${operatorOrigin}/admin/tenant/tenants`);
    await shoot(operatorPage, 'plans', `${operatorOrigin}/admin/billing/plans`);

    // The main pages on a 390-px-wide phone.
    const phone = await signedInPage(browser, acmeOrigin, 'ada@acme.localhost', PHONE);
    const anonymousPhone = await browser.newContext({ viewport: PHONE, deviceScaleFactor: 1 });
    await shoot(await anonymousPhone.newPage(), 'login-mobile', `${acmeOrigin}/admin/login`);
    await anonymousPhone.close();
    await shoot(phone, 'dashboard-mobile', `${acmeOrigin}/admin`);
    await shoot(phone, 'list-mobile', `${acmeOrigin}/admin/task/tasks`);
    if (firstTask) {
      await shoot(phone, 'detail-mobile', `${acmeOrigin}${firstTask}`);
      await editWithError(phone, acmeOrigin, firstTask);
      await shoot(phone, 'edit-with-error-mobile');
    }
    for (const [name, path] of [
      ['subscription-mobile', '/admin/billing/subscription'],
      ['files-mobile', '/admin/file/files'],
      ['notifications-mobile', '/admin/notification/notifications'],
    ] as const) {
      const response = await phone.goto(`${acmeOrigin}${path}`);
      if (response?.status() === 200) await shoot(phone, name);
    }
    const operatorPhone = await signedInPage(browser, operatorOrigin, 'olivia@operator.localhost', PHONE);
    await shoot(operatorPhone, 'tenants-mobile', `${operatorOrigin}/admin/tenant/tenants`);
  } finally {
    await browser.close();
    await app?.close();
    await embedded?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: Error) => {
  process.stderr.write(`screenshots: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
