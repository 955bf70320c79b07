import { beforeAll, describe, expect, it } from 'vitest';
import {
  hasChromium,
  seriousViolations,
  signInThroughLogin,
  useBrowserApp,
  warnNoChromium,
} from './admin-pages-setup.ts';
import { createCustomer, OPERATOR_HOST, signInAs } from '../helpers/app.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

// Issue 47, point 5: a sidebar entry whose feature the plan lacks is shown locked, with a sentence
// and a link to the subscription page (not hidden); the subscription page shows each limit as
// "3 of 5 seats" with a bar; both axe-clean. The operator's tenant page sets the tenant's override
// with a form (features, limits, clear), and the customer's usage bar follows it.

warnNoChromium('test/browser/admin-plan-entitlements.test.ts');

const t = useBrowserApp();
let tenant: TenantRef;
const host = 'plans.localhost';
let admin: { email: string; password: string };

beforeAll(async () => {
  if (!hasChromium) return;
  tenant = await createCustomer(t.app, 'plans', host);
  admin = await addUser(t.app, tenant, { roles: ['admin'], password: 'plans admin password', displayName: 'Ada' });
  const operator = (await signInAs(t.app, t.app.operator, ['billing:catalog'])).cookie;
  const plan = await t.app
    .http()
    .post('/api/v1/billing/plans')
    .set('Cookie', operator)
    .send({
      code: 'no-hooks',
      name: 'No hooks',
      price: 0,
      currency: 'EUR',
      interval: 'month',
      features: ['file.public_links'],
      limits: { 'user.seats': 5, 'webhook.endpoints': 1 },
      active: true,
    });
  expect(plan.status, JSON.stringify(plan.body)).toBe(201);
  const login = await t.app
    .http(host)
    .post('/api/v1/auth/login')
    .send({ email: admin.email, password: admin.password });
  const cookie = String(login.headers['set-cookie']![0]).split(';')[0]!;
  const subscribed = await t.app
    .http(host)
    .post('/api/v1/billing/subscription/subscribe')
    .set('Cookie', cookie)
    .send({ planId: plan.body.id });
  expect(subscribed.status, JSON.stringify(subscribed.body)).toBe(200);
  // Two invitations: the admin and them, 3 of 5 seats.
  for (const email of ['one@plans.test', 'two@plans.test']) {
    const res = await t.app.http(host).post('/api/v1/user/invitations').set('Cookie', cookie).send({ email });
    expect(res.status).toBe(201);
  }
}, 120_000);

describe.skipIf(!hasChromium)('the admin shell under a plan', () => {
  it('shows the entry of a feature the plan lacks locked, with a sentence and a link to the subscription page', async () => {
    const { context, page } = await signInThroughLogin(t.browser, t.origin(host), admin);
    try {
      const locked = page.locator('nav.sidebar a.locked', { hasText: 'Webhook endpoints' });
      expect(await locked.count()).toBe(1);
      expect(await locked.getAttribute('href')).toBe('/admin/billing/subscription');
      expect(await locked.getAttribute('data-code')).toBe('FEATURE_NOT_IN_PLAN');
      expect(await locked.textContent()).toContain('Not in your plan');
      // An entry the plan grants is an ordinary link.
      expect(await page.locator('nav.sidebar a:not(.locked)', { hasText: 'Files' }).count()).toBe(1);
      // The page itself answers with the plan's sentence, not the list.
      const res = await page.goto(`${t.origin(host)}/admin/webhook/endpoints`);
      expect(res?.status()).toBe(403);
      expect(await page.locator('main').textContent()).toContain('Your plan does not include this');
      expect(await seriousViolations(page)).toEqual([]);
      await page.goto(`${t.origin(host)}/admin`);
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('shows each limit as "3 of 5 seats" with a bar on the subscription page', async () => {
    const { context, page } = await signInThroughLogin(t.browser, t.origin(host), admin);
    try {
      await page.goto(`${t.origin(host)}/admin/billing/subscription`);
      const seats = page.locator('[data-limit="user.seats"]');
      expect(await seats.textContent()).toContain('3 of 5 seats');
      const meter = seats.locator('meter');
      expect(await meter.getAttribute('value')).toBe('3');
      expect(await meter.getAttribute('max')).toBe('5');
      expect(await page.locator('[data-limit="webhook.endpoints"]').textContent()).toContain('0 of 1 endpoints');
      // A limit without a bound has no bar.
      expect(await page.locator('[data-limit="token.active"] meter').count()).toBe(0);
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('the operator’s override form sets user.seats in words, refuses a number that is none beside it, and the usage bar follows', async () => {
    const operatorAdmin = await addUser(t.app, t.app.operator, {
      roles: ['admin'],
      password: 'operator admin password',
      displayName: 'Olga',
    });
    const operatorSite = t.origin(OPERATOR_HOST);
    const tenantPage = `${operatorSite}/admin/tenant/tenants/${tenant.id}`;
    const operator = await signInThroughLogin(t.browser, operatorSite, operatorAdmin);
    try {
      const page = operator.page;
      await page.goto(tenantPage);
      expect(await page.locator('[data-field="entitlements"]').textContent()).toContain('None');
      const seats = page.locator('[data-override-limit="user.seats"] input[type="number"]');
      // Half a seat is no number of seats: refused beside the field, in words, nothing stored.
      await seats.fill('2.5');
      await page.getByRole('button', { name: 'Save the override' }).click();
      const error = page.locator('[data-override-limit="user.seats"] .error-text');
      await error.waitFor();
      expect(await error.textContent()).toContain('Enter a whole number of seats');
      expect(await page.locator('#entitlements-alert').textContent()).not.toContain('VALIDATION_FAILED');
      expect(await seriousViolations(page)).toEqual([]);

      await seats.fill('7');
      await page.getByRole('button', { name: 'Save the override' }).click();
      await page.getByText('The plan override was saved').waitFor();
      expect(await page.locator('[data-field="entitlements"]').textContent()).toContain('7 seats');
      expect(await seats.inputValue()).toBe('7');
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await operator.context.close();
    }

    const customer = await signInThroughLogin(t.browser, t.origin(host), admin);
    try {
      await customer.page.goto(`${t.origin(host)}/admin/billing/subscription`);
      const bar = customer.page.locator('[data-limit="user.seats"]');
      expect(await bar.textContent()).toContain('3 of 7 seats');
      expect(await bar.locator('meter').getAttribute('max')).toBe('7');
    } finally {
      await customer.context.close();
    }

    // Cleared: the plan's five seats again.
    const again = await signInThroughLogin(t.browser, operatorSite, operatorAdmin);
    try {
      await again.page.goto(tenantPage);
      again.page.once('dialog', (dialog) => void dialog.accept());
      await again.page.getByRole('button', { name: 'Clear the override' }).click();
      await again.page.getByText('The plan override was cleared').waitFor();
      expect(await again.page.locator('[data-field="entitlements"]').textContent()).toContain('None');
    } finally {
      await again.context.close();
    }
    const res = await t.app
      .http(host)
      .get('/api/v1/billing/entitlements')
      .set('Cookie', (await signInAs(t.app, tenant, ['billing:read'])).cookie);
    expect(res.body.limits.find((l: { name: string }) => l.name === 'user.seats')).toMatchObject({ value: 5 });
  });
});
