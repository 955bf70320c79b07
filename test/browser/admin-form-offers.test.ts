import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { createCustomer } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import {
  hasChromium,
  seriousViolations,
  signedInSession,
  type SignedInSession,
  useBrowserApp,
  warnNoChromium,
} from './admin-pages-setup.ts';

// Issue 42, point 2: a generated form offers only what the API accepts. The task's edit form offers
// the status moves the declared graph allows from where the task stands and names Resolve for the
// rest; a new form asks nothing it cannot change (no forced single choice, no read-only values);
// and a form rendered again after a refused post shows only its own messages, also after Preview.

warnNoChromium('test/browser/admin-form-offers.test.ts');

const t = useBrowserApp();
const ACME = 'acme.localhost';
const WIDTHS = [
  { name: 'desktop', width: 1280, height: 900 },
  { name: 'phone', width: 390, height: 844 },
];

let acme: TenantRef;
let admin: { id: string; email: string; password: string };
let cookie: string;
let asAdmin: SignedInSession;

const api = (method: 'get' | 'post', path: string, body?: object) => {
  const req = t.app.http(ACME)[method](path).set('Cookie', cookie);
  return body ? req.send(body) : req;
};

async function newTask(title: string, then: 'open' | 'assigned' | 'resolved'): Promise<string> {
  const id = (
    await api('post', '/api/v1/task/tasks', { title, priority: 'low', deadline: '2099-01-01T00:00:00Z' }).expect(201)
  ).body.id as string;
  if (then !== 'open') await api('post', `/api/v1/task/tasks/${id}/assign`, { assigneeId: admin.id }).expect(200);
  if (then === 'resolved') await api('post', `/api/v1/task/tasks/${id}/resolve`, { resolution: 'done' }).expect(200);
  return id;
}

/** The edit form's status: the values its select offers, or the read-only value, and what is said under it. */
async function statusField(page: Page): Promise<{ options: string[] | null; shown: string; hint: string }> {
  const select = page.locator('select[name=status]');
  if ((await select.count()) > 0) {
    const hint = (await page.locator('#field-status-hint').textContent()) ?? '';
    return {
      options: await select.locator('option').evaluateAll((os) => os.map((o) => o.getAttribute('value') ?? '')),
      shown: (await select.locator('option:checked').textContent()) ?? '',
      hint,
    };
  }
  const field = page.locator('.field-readonly', { has: page.locator('.label', { hasText: /^Status$/ }) });
  return {
    options: null,
    shown: ((await field.locator('.readonly').textContent()) ?? '').trim(),
    hint: ((await field.locator('.hint').textContent()) ?? '').trim(),
  };
}

const RESOLVE_POINTER = 'To move it to resolved, use the “Resolve” button on the task’s page.';

describe.skipIf(!hasChromium)('forms offer only what the API accepts', () => {
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

  it('the task edit form offers the moves the status graph allows from the current status, and names Resolve for the rest', async () => {
    const acknowledged = await newTask('Acknowledged one', 'assigned');
    const open = await newTask('Open one', 'open');
    const resolved = await newTask('Resolved one', 'resolved');
    const { context, page } = await asAdmin();
    try {
      await page.goto(`${t.origin(ACME)}/admin/task/tasks/${acknowledged}/edit`);
      expect(await statusField(page)).toEqual({
        options: ['acknowledged', 'in_progress'],
        shown: 'Acknowledged',
        hint: expect.stringContaining(RESOLVE_POINTER),
      });
      expect(await seriousViolations(page)).toEqual([]);
      // An offered move is one the API takes.
      await page.selectOption('select[name=status]', 'in_progress');
      await Promise.all([
        page.waitForURL(`${t.origin(ACME)}/admin/task/tasks/${acknowledged}`),
        page.click('#resource-form .actions button[type=submit]:not([name])'),
      ]);
      expect((await api('get', `/api/v1/task/tasks/${acknowledged}`)).body.status).toBe('in_progress');

      // In progress and assigned: no PATCH move is left (resolved is Resolve's), so nothing to choose.
      await page.goto(`${t.origin(ACME)}/admin/task/tasks/${acknowledged}/edit`);
      expect(await statusField(page)).toEqual({ options: null, shown: 'In progress', hint: RESOLVE_POINTER });

      // Open with nobody assigned: it moves on by Assign or Resolve, not by this form.
      await page.goto(`${t.origin(ACME)}/admin/task/tasks/${open}/edit`);
      expect(await statusField(page)).toEqual({ options: null, shown: 'Open', hint: RESOLVE_POINTER });

      // Resolved: reopened or closed here; Resolve no longer applies, so it is not named.
      await page.goto(`${t.origin(ACME)}/admin/task/tasks/${resolved}/edit`);
      const field = await statusField(page);
      expect(field.options).toEqual(['in_progress', 'resolved', 'closed']);
      expect(field.hint).not.toContain('Resolve');
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('a new form asks only what the create takes: no single forced choice, no read-only values', async () => {
    const { context, page } = await asAdmin();
    try {
      for (const path of ['/admin/task/tasks/new', '/admin/content/contents/new', '/admin/user/users/new']) {
        await page.goto(`${t.origin(ACME)}${path}`);
        expect(await page.locator('#resource-form .field-readonly').count(), path).toBe(0);
        const forced = await page
          .locator('#resource-form select')
          .evaluateAll((selects) =>
            selects
              .filter((s) => s.querySelectorAll('option:not([value=""])').length <= 1)
              .map((s) => s.getAttribute('name')),
          );
        expect(forced, path).toEqual([]);
      }
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it.each(WIDTHS)(
    'after a refused post, Preview and the next post show only their own messages ($name)',
    async (size) => {
      const { context, page } = await asAdmin();
      const errors = () => page.locator('#resource-form .error-text').allInnerTexts();
      const fieldsInError = () =>
        page.locator('#resource-form .field-error').evaluateAll((fields) => fields.map((f) => f.id));
      try {
        await page.setViewportSize(size);
        await page.goto(`${t.origin(ACME)}/admin/task/tasks/new`);
        await page.click('#resource-form .actions button[type=submit]:not([name])');
        await vi.waitFor(
          async () => expect(await fieldsInError()).toEqual(['field-title-field', 'field-deadline-field']),
          {
            timeout: 10_000,
          },
        );

        // The title is filled since: the preview's rendering says nothing about it, nor anything else.
        await page.fill('input[name=title]', 'Filled since');
        await page.fill('textarea[name=description]', 'Some **notes**');
        await page.click('button[name=_preview][value=description]');
        await page.waitForSelector('#field-description-preview strong');
        expect(await errors()).toEqual([]);
        expect(await page.locator('#resource-form [role=alert]').count()).toBe(0);
        expect(await page.inputValue('input[name=title]')).toBe('Filled since');

        // Posted again with the due date still empty: that message, and only that one.
        await page.click('#resource-form .actions button[type=submit]:not([name])');
        await vi.waitFor(async () => expect(await fieldsInError()).toEqual(['field-deadline-field']), {
          timeout: 10_000,
        });
        expect(await errors()).toEqual(['Fill in this field.']);
        expect(await seriousViolations(page)).toEqual([]);
      } finally {
        await context.close();
      }
    },
  );
});
