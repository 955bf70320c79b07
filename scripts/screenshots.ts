/**
 * npm run screenshots: PNGs of the admin shell's main pages under docs/screenshots/, for
 * docs/admin.md. Starts the service on a throw-away embedded PostgreSQL with sample data, signs in
 * through /admin/login in Chromium like a person, and photographs each page.
 *
 *   npm run screenshots                 # Chromium at /usr/bin/chromium
 *   CHROMIUM=/path/to/chrome npm run screenshots
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import { chromium, type Page } from 'playwright-core';
import { ROOT, buildApp, type App } from '../framework/app.ts';
import { ensureDatabase, startEmbeddedPostgres, type EmbeddedServer } from '../framework/db/embedded.ts';
import { validateConfig } from '../framework/config/load.ts';
import type { TenantRef } from '../framework/context/tenant.ts';
import { createTenant } from '../framework/tenancy/create-tenant.ts';
import { allModules } from '../modules/index.ts';
import { usersService } from '../modules/user/users-service.ts';
import { hashPassword } from '../modules/user/passwords.ts';
import { setRole } from '../modules/auth/roles.routes.ts';
import { CHROMIUM, CHROMIUM_ARGS } from '../test/helpers/chromium.ts';

const OUT = resolve(ROOT, 'docs/screenshots');
const PASSWORD = 'a sample password';

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
async function person(app: App, tenant: TenantRef, email: string, displayName: string, roles: string[]): Promise<string> {
  const hash = await hashPassword(PASSWORD);
  return app.services.transactions.run(tenant, async (tx) => {
    const user = await usersService.invite(tx, { email, displayName, roles });
    await usersService.setPasswordHash(tx, user.id, hash, { activate: true });
    return user.id;
  });
}

/** Sample rows through the entities' own operations, as the API would write them. */
async function sampleData(app: App, operator: TenantRef, acme: TenantRef): Promise<void> {
  const { registry, transactions } = app.services;
  await transactions.run(operator, async (tx) => {
    await createTenant(tx, app.services, { slug: 'globex', name: 'Globex Corporation', host: 'globex.localhost' });
    const plans = registry.ops('billing.plan');
    for (const [code, name, price] of [['starter', 'Starter', 900], ['team', 'Team', 2900], ['business', 'Business', 9900]] as const) {
      await plans.create(tx, { code, name, price, currency: 'EUR', interval: 'month', features: ['Support by mail'], active: true });
    }
  });
  const ada = await person(app, acme, 'ada@acme.localhost', 'Ada Admin', ['admin']);
  await person(app, acme, 'max@acme.localhost', 'Max Member', ['member']);
  // Acting as Ada: content records its author from the acting user.
  await transactions.run(acme, async (tx) => {
    await setRole(tx, registry, 'support', ['content:read', 'task:read', 'task:update', 'user:read']);
    const contents = registry.ops('content.content');
    for (const [slug, title, kind] of [['welcome', 'Welcome to Acme', 'page'], ['pricing', 'Pricing', 'page'], ['spring-news', 'Spring news', 'post']] as const) {
      await contents.create(tx, { slug, title, kind, body: `# ${title}\n\nSample text.` });
    }
  }, { actorId: ada });
  // One transaction each: rows made in one share its time, and the list (by createdAt) would mix them.
  const tasks = registry.ops('task.task');
  const day = 24 * 3600_000;
  for (const [title, priority, days] of TASKS) {
    await transactions.run(acme, (tx) => tasks.create(tx, { title, priority, deadline: new Date(Date.now() + days * day).toISOString(), description: `${title}.` }));
  }
}

const TASKS: [string, string, number][] = [
  ['Call the customer back', 'high', 1],
  ['Renew the TLS certificate', 'critical', 3],
  ['Write the onboarding guide', 'medium', 10],
  ['Review the March invoices', 'low', 20],
  ['Plan the quarterly review', 'medium', 30],
  ...Array.from({ length: 19 }, (_, i): [string, string, number] => [`Follow up on ticket #${4100 + i}`, ['low', 'medium', 'high'][i % 3]!, 2 + i]),
];

async function signIn(page: Page, origin: string, email: string): Promise<void> {
  await page.goto(`${origin}/admin/login`);
  await page.fill('input[name=email]', email);
  await page.fill('input[name=password]', PASSWORD);
  await Promise.all([page.waitForURL(`${origin}/admin`), page.click('button[type=submit]')]);
}

async function shoot(page: Page, name: string, url?: string): Promise<void> {
  if (url) await page.goto(url);
  await page.waitForLoadState('networkidle');
  await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });
  process.stdout.write(`docs/screenshots/${name}.png  ${page.url()}\n`);
}

async function main(): Promise<void> {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: apt-get install chromium, or set CHROMIUM`);
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
    const { rows } = await app.services.db.pool.query<{ id: string; slug: string }>('select id, slug from tenants where is_operator');
    const operator: TenantRef = { id: rows[0]!.id, slug: rows[0]!.slug, isOperator: true };
    const acme = await app.services.transactions.run(operator, (tx) => createTenant(tx, app!.services, { slug: 'acme', name: 'Acme Inc.', host: 'acme.localhost' }));
    await person(app, operator, 'olivia@operator.localhost', 'Olivia Operator', ['admin']);
    await sampleData(app, operator, acme);

    const acmeOrigin = `http://acme.localhost:${port}`;
    const operatorOrigin = `http://operator.localhost:${port}`;
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
    const page = await context.newPage();

    await shoot(page, 'login', `${acmeOrigin}/admin/login`);
    await signIn(page, acmeOrigin, 'ada@acme.localhost');
    await shoot(page, 'dashboard', `${acmeOrigin}/admin`);
    await shoot(page, 'list', `${acmeOrigin}/admin/task/tasks`);
    const firstTask = await page.getAttribute('main table tbody tr a', 'href');
    if (firstTask) {
      await shoot(page, 'detail', `${acmeOrigin}${firstTask}`);
      await page.goto(`${acmeOrigin}${firstTask}/edit`);
      await page.fill('[name=title]', '');
      // The browser's own checks would stop the post: the shot is of the service's answer.
      await page.$$eval('[required], [minlength]', (els) => els.forEach((el) => { el.removeAttribute('required'); el.removeAttribute('minlength'); }));
      await Promise.all([page.waitForLoadState('load'), page.click('main form button[type=submit]')]);
      await shoot(page, 'edit-with-error');
    }
    await shoot(page, 'roles', `${acmeOrigin}/admin/auth/roles/support`);
    await shoot(page, 'health', `${acmeOrigin}/admin/health`);
    await shoot(page, 'gallery', `${acmeOrigin}/admin/_gallery`);

    const operatorContext = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
    const operatorPage = await operatorContext.newPage();
    await signIn(operatorPage, operatorOrigin, 'olivia@operator.localhost');
    await shoot(operatorPage, 'tenants', `${operatorOrigin}/admin/tenant/tenants`);
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
