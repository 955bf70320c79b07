import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createCustomer } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { CompiledQuery } from 'kysely';
import type { TestApp } from '../helpers/app.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import {
  hasChromium,
  useBrowserApp,
  seriousViolations,
  signedInSession,
  type SignedInSession,
  warnNoChromium,
} from './admin-pages-setup.ts';

warnNoChromium('test/browser/admin-references.test.ts');

/**
 * Issue 35, point 2: a field naming another entity's row (task.assigneeId → user) shows that row's
 * title linked to it, on lists (one read per page, not per row) and detail pages, and is chosen
 * from a select — or, past the picker's size, with a type-ahead over the user list's q, which
 * without JavaScript is a Search button posting the form back.
 */

const t = useBrowserApp();
let acme: TenantRef;
let admin: { id: string; email: string; password: string };
let cookie: string;
let asAdmin: SignedInSession;

const ACME = 'acme.localhost';
const BIG = 'big.localhost';

/** A role of the tenant; an assignee must hold one granting task:read (issue 41, point 8: assignment). */
async function addRole(app: TestApp, tenant: TenantRef, name: string, permissions: string[]): Promise<void> {
  await app.services.transactions.run(tenant, (ctx) =>
    ctx.db.executeQuery(
      CompiledQuery.raw('insert into roles (name, permissions) values ($1, $2)', [name, permissions]),
    ),
  );
}

async function signIn(host: string, person: { email: string; password: string }): Promise<string> {
  const login = await t.app
    .http(host)
    .post('/api/v1/auth/login')
    .send({ email: person.email, password: person.password });
  return login.headers['set-cookie']![0]!.split(';', 1)[0]!;
}

async function newTask(host: string, session: string, title: string): Promise<string> {
  const res = await t.app
    .http(host)
    .post('/api/v1/task/tasks')
    .set('Cookie', session)
    .send({ title, priority: 'low', deadline: '2099-01-01T00:00:00Z' })
    .expect(201);
  return res.body.id;
}

describe.skipIf(!hasChromium)('references in the admin shell: titles, links and pickers', () => {
  beforeAll(async () => {
    acme = await createCustomer(t.app, 'acme', ACME);
    await addRole(t.app, acme, 'crew', ['task:read']);
    admin = await addUser(t.app, acme, { roles: ['admin'], password: 'acme admin password', email: 'boss@acme.test' });
    cookie = await signIn(ACME, admin);
    asAdmin = await signedInSession(t.browser, t.origin(ACME), admin);
  });
  afterAll(async () => {
    vi.restoreAllMocks();
  });

  // Three pages, each checked by axe: more than the default 30 s on a loaded 2-core machine.
  it('a small tenant: Assign offers a select of people by address; the task then shows the assignee by address, linked to the user, on its page and in the list', {
    timeout: 90_000,
  }, async () => {
    const worker = await addUser(t.app, acme, {
      password: null,
      roles: ['crew'],
      email: 'worker@acme.test',
      displayName: 'Wendy Worker',
    });
    const taskId = await newTask(ACME, cookie, 'Fix the boiler');
    const { context, page } = await asAdmin();
    try {
      await page.goto(`${t.origin(ACME)}/admin/task/tasks/${taskId}/assign`);
      const options = await page.$$eval('select[name=assigneeId] option', (els) =>
        els.map((el) => ({ value: el.getAttribute('value'), label: el.textContent })),
      );
      expect(options).toContainEqual({ value: worker.id, label: 'worker@acme.test' });
      expect(options).toContainEqual({ value: admin.id, label: 'boss@acme.test' });
      // Few people: no search box, and no text box for an id.
      expect(await page.$('input[name=_q]')).toBeNull();
      expect(await page.$('input[name=assigneeId]')).toBeNull();
      expect(await seriousViolations(page)).toEqual([]);

      await page.selectOption('select[name=assigneeId]', worker.id);
      await Promise.all([
        page.waitForURL(`${t.origin(ACME)}/admin/task/tasks/${taskId}`),
        page.click('#resource-form .actions button[type=submit]'),
      ]);
      const link = page.locator(`dl.values a[href="/admin/user/users/${worker.id}"]`);
      expect(await link.textContent()).toBe('worker@acme.test');
      expect(await page.content()).not.toContain(`<dd>${worker.id}</dd>`);
      expect(await seriousViolations(page)).toEqual([]);

      await page.goto(`${t.origin(ACME)}/admin/task/tasks`);
      expect(await page.locator(`table a[href="/admin/user/users/${worker.id}"]`).textContent()).toBe(
        'worker@acme.test',
      );
      expect(await seriousViolations(page)).toEqual([]);
      // The API keeps the id.
      const api = await t.app.http(ACME).get(`/api/v1/task/tasks/${taskId}`).set('Cookie', cookie).expect(200);
      expect(api.body.assigneeId).toBe(worker.id);
    } finally {
      await context.close();
    }
  });

  it("an entity's own reference field, in its new form: a select of the referenced rows by title, and the created record shows the title, linked", {
    timeout: 60_000,
  }, async () => {
    // The test kit's memo declares admin.references: { ownerId: 'user.user' }, a field the body writes on create.
    const { context, page } = await asAdmin();
    try {
      await page.goto(`${t.origin(ACME)}/admin/testkit/memos/new`);
      const options = await page.$$eval('select[name=ownerId] option', (els) =>
        els.map((el) => ({ value: el.getAttribute('value'), label: el.textContent })),
      );
      expect(options).toContainEqual({ value: admin.id, label: 'boss@acme.test' });
      expect(await page.$('input[name=ownerId]')).toBeNull();
      expect(await seriousViolations(page)).toEqual([]);

      await page.selectOption('select[name=ownerId]', admin.id);
      await page.fill('#field-text', 'Call the plumber');
      await Promise.all([
        page.waitForURL(/\/admin\/testkit\/memos\/[0-9a-f-]{36}$/),
        page.click('#resource-form .actions button[type=submit]'),
      ]);
      expect(await page.locator(`dl.values a[href="/admin/user/users/${admin.id}"]`).textContent()).toBe(
        'boss@acme.test',
      );
      expect(await seriousViolations(page)).toEqual([]);
      const id = new URL(page.url()).pathname.split('/').at(-1)!;
      const api = await t.app.http(ACME).get(`/api/v1/testkit/memos/${id}`).set('Cookie', cookie).expect(200);
      expect(api.body).toMatchObject({ ownerId: admin.id, text: 'Call the plumber' });
    } finally {
      await context.close();
    }
  });

  it('a list page reads the assignees of all its rows in one statement, not one per row', async () => {
    const people = await Promise.all(
      [1, 2, 3].map((n) => addUser(t.app, acme, { password: null, roles: ['crew'], email: `helper${n}@acme.test` })),
    );
    for (const person of people) {
      const id = await newTask(ACME, cookie, `Job for ${person.email}`);
      await t.app
        .http(ACME)
        .post(`/api/v1/task/tasks/${id}/assign`)
        .set('Cookie', cookie)
        .send({ assigneeId: person.id })
        .expect(200);
    }
    const readMany = vi.spyOn(t.app.services.operations.of('user.user'), 'readMany');
    const { context, page } = await asAdmin();
    try {
      readMany.mockClear();
      await page.goto(`${t.origin(ACME)}/admin/task/tasks`);
      for (const person of people)
        expect(await page.locator(`table a[href="/admin/user/users/${person.id}"]`).textContent()).toBe(person.email);
      expect(readMany).toHaveBeenCalledTimes(1);
      expect([...readMany.mock.calls[0]![1]]).toEqual(expect.arrayContaining(people.map((p) => p.id)));
    } finally {
      readMany.mockRestore();
      await context.close();
    }
  });

  describe('a tenant with more people than the picker shows', () => {
    let big: TenantRef;
    let bigAdmin: { id: string; email: string; password: string };
    let bigCookie: string;
    let asBigAdmin: SignedInSession;
    let needle: { id: string; email: string };

    beforeAll(async () => {
      big = await createCustomer(t.app, 'big', BIG);
      await addRole(t.app, big, 'crew', ['task:read']);
      bigAdmin = await addUser(t.app, big, {
        roles: ['admin'],
        password: 'big admin password',
        email: 'admin@big.test',
      });
      for (let n = 0; n < 60; n++)
        await addUser(t.app, big, {
          password: null,
          roles: ['crew'],
          email: `person${String(n).padStart(2, '0')}@big.test`,
        });
      needle = await addUser(t.app, big, {
        password: null,
        roles: ['crew'],
        email: 'zz-needle@big.test',
        displayName: 'Nina Needle',
      });
      // Matching the searches too, but nobody the task may go to: never offered, counted or listed.
      await addUser(t.app, big, {
        password: null,
        roles: ['crew'],
        status: 'deactivated',
        email: 'zz-needle-gone@big.test',
        displayName: 'Nina Gone',
      });
      await addUser(t.app, big, { password: null, email: 'zz-needle-reader@big.test', displayName: 'Nina Reader' });
      bigCookie = await signIn(BIG, bigAdmin);
      asBigAdmin = await signedInSession(t.browser, t.origin(BIG), bigAdmin);
    });

    it('with JavaScript: typing in the search box refills the select from the user list (q), and the chosen person is assigned', async () => {
      const taskId = await newTask(BIG, bigCookie, 'Find the needle');
      const { context, page } = await asBigAdmin();
      try {
        await page.goto(`${t.origin(BIG)}/admin/task/tasks/${taskId}/assign`);
        // The first page of people (sorted by address) leaves the needle out; a note says more exist.
        expect(await page.$(`select[name=assigneeId] option[value="${needle.id}"]`)).toBeNull();
        expect(await page.textContent('#field-assigneeId-note')).toContain('first 50 of 62');
        expect(await seriousViolations(page)).toEqual([]);
        const fragment = page.waitForResponse(
          (r) =>
            new URL(r.url()).pathname === '/admin/user/users/options' &&
            new URL(r.url()).searchParams.get('_q') === 'needle',
        );
        await page.fill('input[name=_q]', 'needle');
        await fragment;
        await page.waitForSelector(`select[name=assigneeId] option[value="${needle.id}"]`, { state: 'attached' });
        const labels = await page.$$eval('select[name=assigneeId] option', (els) => els.map((el) => el.textContent));
        expect(labels.slice(1)).toEqual(['zz-needle@big.test']);
        await page.selectOption('select[name=assigneeId]', needle.id);
        await Promise.all([
          page.waitForURL(`${t.origin(BIG)}/admin/task/tasks/${taskId}`),
          page.click('#resource-form .actions button[type=submit]'),
        ]);
        expect(await page.locator(`dl.values a[href="/admin/user/users/${needle.id}"]`).textContent()).toBe(
          'zz-needle@big.test',
        );
      } finally {
        await context.close();
      }
    });

    it('without JavaScript: the Search button posts the form back with the matching people, nothing assigned until the form is sent', async () => {
      const taskId = await newTask(BIG, bigCookie, 'Find the needle by hand');
      const { context, page } = await asBigAdmin({ javaScriptEnabled: false });
      try {
        await page.goto(`${t.origin(BIG)}/admin/task/tasks/${taskId}/assign`);
        await page.fill('input[name=_q]', 'Nina');
        await page.click('button[name=_search]');
        expect(new URL(page.url()).pathname).toBe(`/admin/task/tasks/${taskId}/assign`);
        const labels = await page.$$eval('select[name=assigneeId] option', (els) => els.map((el) => el.textContent));
        expect(labels.slice(1)).toEqual(['zz-needle@big.test']);
        expect(await page.inputValue('input[name=_q]')).toBe('Nina');
        const before = await t.app.http(BIG).get(`/api/v1/task/tasks/${taskId}`).set('Cookie', bigCookie).expect(200);
        expect(before.body.assigneeId).toBeNull();
        // (axe cannot run with JavaScript off; the same page with it on is checked above.)
        await page.selectOption('select[name=assigneeId]', needle.id);
        await Promise.all([
          page.waitForURL(`${t.origin(BIG)}/admin/task/tasks/${taskId}`),
          page.click('#resource-form .actions button[type=submit]'),
        ]);
        const after = await t.app.http(BIG).get(`/api/v1/task/tasks/${taskId}`).set('Cookie', bigCookie).expect(200);
        expect(after.body.assigneeId).toBe(needle.id);
      } finally {
        await context.close();
      }
    });
  });
});
