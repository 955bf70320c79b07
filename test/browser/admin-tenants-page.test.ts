import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR_HOST, createCustomer, startTestApp, type TestApp } from '../helpers/app.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import { outboxEvents } from '../modules/user/support.ts';
import {
  hasChromium,
  closeContexts,
  workerChromium,
  listen,
  seriousViolations,
  signInThroughLogin,
  warnNoChromium,
} from './admin-pages-setup.ts';

warnNoChromium('test/browser/admin-tenants-page.test.ts');

let app: TestApp;
let browser: Browser;
let origin: string;
let operator: { email: string; password: string };
const sessions: BrowserContext[] = [];

/** Text a person must never read on these pages: problem codes, statuses, validator wording, patterns. */
const CODE_LIKE = /[A-Z]{2,}_[A-Z_]+|\b\d{3} [A-Z]|must match|must NOT|\^[^\s]*\$|\/body\//;

/** An operator's signed-in page, with or without JavaScript (htmx). */
async function operatorPage(javaScriptEnabled: boolean): Promise<Page> {
  const { context, page } = await signInThroughLogin(browser, origin, operator, { javaScriptEnabled });
  sessions.push(context);
  return page;
}

const mainText = async (page: Page) => (await page.locator('main').textContent()) ?? '';

async function tenantIdOf(slug: string): Promise<string> {
  const { rows } = await app.services.db.pool.query<{ id: string }>('select id from tenants where slug = $1', [slug]);
  return rows[0]!.id;
}

// A browser per action and axe on a busy shared machine: each test may take a while.
describe.skipIf(!hasChromium)('the operator’s tenants page', { timeout: 120_000 }, () => {
  beforeAll(async () => {
    app = await startTestApp();
    operator = await addUser(app, app.operator, { roles: ['admin'], password: 'operator password' });
    for (let i = 0; i < 22; i++) await createCustomer(app, `shop-${String(i).padStart(2, '0')}`);
    await createCustomer(app, 'globex', 'www.globex.test');
    origin = (await listen(app))(OPERATOR_HOST);
    browser = await workerChromium();
  });
  afterAll(async () => {
    for (const context of sessions) await context.close();
    if (browser) await closeContexts(browser);
    await app?.close();
  });

  it('pages by cursor and searches by name or host, without JavaScript', async () => {
    const page = await operatorPage(false);
    await page.goto(`${origin}/admin/tenant/tenants`);
    expect(await page.locator('tbody tr[data-tenant]').count()).toBe(20);
    await page.click('a[rel=next]');
    expect(new URL(page.url()).searchParams.get('after')).toBeTruthy();
    const second = await page
      .locator('tbody tr[data-tenant]')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-tenant')));
    // Newest first, as every admin list opens (issue 42, point 8): the second page holds the oldest.
    expect(second).toEqual(['shop-02', 'shop-01', 'shop-00', app.operator.slug]);

    await page.fill('#tenant-search', 'GLOBEX.test');
    await page.click('form[role=search] button[type=submit]');
    expect(
      await page.locator('tbody tr[data-tenant]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-tenant'))),
    ).toEqual(['globex']);
    await page.fill('#tenant-search', 'nothing-like-this');
    await page.click('form[role=search] button[type=submit]');
    expect(await mainText(page)).toContain('No tenant matches “nothing-like-this”.');
  });

  it('creates a tenant with its first host, and says in words what is wrong with a refused form', async () => {
    const page = await operatorPage(false);
    await page.goto(`${origin}/admin/tenant/tenants`);
    await page.fill('#create-name', 'Initech');
    await page.fill('#create-slug', 'Not A Slug!');
    await page.fill('#create-host', 'initech.example.com');
    await page.click('#create-form button[type=submit]');
    expect(await page.locator('#create-slug-error').textContent()).toContain(
      'Use lowercase letters, digits and hyphens',
    );
    expect(await mainText(page)).not.toMatch(CODE_LIKE);
    expect(await page.inputValue('#create-name')).toBe('Initech');

    await page.fill('#create-slug', 'globex');
    await page.click('#create-form button[type=submit]');
    expect(await page.locator('#create-slug-error').textContent()).toContain('already exists');
    expect(await mainText(page)).not.toMatch(CODE_LIKE);

    await page.fill('#create-slug', 'initech');
    await page.click('#create-form button[type=submit]');
    const id = await tenantIdOf('initech');
    expect(new URL(page.url()).pathname).toBe(`/admin/tenant/tenants/${id}`);
    expect(await mainText(page)).toContain('The tenant was created.');
    expect(await page.locator('li[data-host="initech.example.com"]').textContent()).toContain('(primary)');
    expect((await outboxEvents(app, 'tenant.created')).some((e) => e.payload.id === id)).toBe(true);
  });

  it('adds a host with htmx and removes one without JavaScript', async () => {
    const tenant = await createCustomer(app, 'hooli');
    const page = await operatorPage(true);
    await page.goto(`${origin}/admin/tenant/tenants/${tenant.id}`);
    await page.fill('#add-host', 'not a host');
    await page.click('#add-host-form button[type=submit]');
    await page.locator('#add-host-alert').waitFor();
    expect((await page.locator('#add-host-error').textContent())?.trim()).toBe('Not a host name.');
    expect(await mainText(page)).not.toMatch(CODE_LIKE);
    await page.fill('#add-host', 'www.hooli.test');
    await page.check('#add-host-primary');
    await Promise.all([page.waitForURL(/done=host-added/), page.click('#add-host-form button[type=submit]')]);
    expect(await page.locator('li[data-host="www.hooli.test"]').textContent()).toContain('(primary)');
    expect((await app.http('www.hooli.test').get('/api/v1/user/users')).status).toBe(401);

    const plain = await operatorPage(false);
    await plain.goto(`${origin}/admin/tenant/tenants/${tenant.id}`);
    await plain.click('li[data-host="hooli.localhost"] button');
    expect(await mainText(plain)).toContain('The host was removed.');
    expect(await plain.locator('li[data-host]').count()).toBe(1);
    await expect.poll(async () => (await app.http('hooli.localhost').get('/api/v1/user/users')).status).toBe(404);
  });

  it('suspends and resumes a tenant, asking first with htmx', async () => {
    const tenant = await createCustomer(app, 'umbrella');
    const page = await operatorPage(true);
    page.on('dialog', (dialog) => void dialog.accept());
    await page.goto(`${origin}/admin/tenant/tenants/${tenant.id}`);
    await Promise.all([page.waitForURL(/done=suspended/), page.click('button:has-text("Suspend Customer umbrella")')]);
    expect(await page.locator('[data-status]').textContent()).toContain('Suspended');
    await expect.poll(async () => (await app.http('umbrella.localhost').get('/api/v1/user/users')).status).toBe(404);
    await Promise.all([page.waitForURL(/done=resumed/), page.click('button:has-text("Resume Customer umbrella")')]);
    expect((await page.locator('[data-status]').textContent())?.trim()).toBe('Active');
    expect((await app.http('umbrella.localhost').get('/api/v1/user/users')).status).toBe(401);
  });

  it('invites the first administrator, and refuses a bad address in words', async () => {
    const tenant = await createCustomer(app, 'wonka');
    const page = await operatorPage(false);
    await page.goto(`${origin}/admin/tenant/tenants/${tenant.id}`);
    await page.fill('#invite-email', 'not-an-address');
    await page.click('#invite-form button[type=submit]');
    expect((await page.locator('#invite-email-error').textContent())?.trim()).toBeTruthy();
    expect(await mainText(page)).not.toMatch(CODE_LIKE);
    await page.fill('#invite-email', 'boss@wonka.test');
    await page.fill('#invite-name', 'Willy');
    await page.click('#invite-form button[type=submit]');
    expect(await mainText(page)).toContain('The invitation was sent.');
    const invited = (await outboxEvents(app, 'user.invited')).filter((e) => e.tenantId === tenant.id);
    expect(invited).toHaveLength(1);

    await page.fill('#invite-email', 'BOSS@wonka.test');
    await page.click('#invite-form button[type=submit]');
    expect(await page.locator('#invite-alert').isVisible()).toBe(true);
    expect(await mainText(page)).not.toMatch(CODE_LIKE);
  });

  it('is refused to a customer’s administrator', async () => {
    const acme = await createCustomer(app, 'acme-refused', 'acme-refused.localhost');
    const admin = await addUser(app, acme, { roles: ['admin'], password: 'acme admin password' });
    const acmeOrigin = origin.replace(OPERATOR_HOST, 'acme-refused.localhost');
    const { context, page } = await signInThroughLogin(browser, acmeOrigin, admin);
    sessions.push(context);
    const answer = await page.goto(`${acmeOrigin}/admin/tenant/tenants`);
    expect(answer!.status()).toBe(403);
    expect(await mainText(page)).not.toMatch(CODE_LIKE);
  });

  it('has no serious or critical axe violation on the list, a tenant and a refused form', async () => {
    const page = await operatorPage(true);
    await page.goto(`${origin}/admin/tenant/tenants`);
    expect(await seriousViolations(page)).toEqual([]);
    await page.goto(`${origin}/admin/tenant/tenants/${await tenantIdOf('globex')}`);
    expect(await seriousViolations(page)).toEqual([]);
    await page.goto(`${origin}/admin/tenant/tenants`);
    await page.fill('#create-name', 'x');
    await page.fill('#create-slug', 'BAD');
    await page.fill('#create-host', 'x.test');
    await page.click('#create-form button[type=submit]');
    await page.locator('#create-alert').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
  });
});
