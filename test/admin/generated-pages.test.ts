import { commandSample, createSample } from '../helpers/samples/overrides.ts';
import { sessionFormToken } from '../../framework/access/form-token.ts';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import type { ResolvedEntity } from '../../framework/entity/resolve.ts';
import { generatedResources } from '../../framework/admin/resource-pages/resource-pages.ts';
import { notify } from '../../modules/notification/notify.ts';
import { checkedSample, sampleValue } from '../helpers/samples/values.ts';

let app: TestApp;
let acme: TenantRef;
const HOST = 'acme.localhost';
// A signed-in browser's form token is its session's own (framework/access/form-token.ts).
const csrfOf = (who: SignedIn) => sessionFormToken(who.rawSessionId);

beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'acme', HOST);
});
afterAll(async () => {
  await app?.close();
});

const withToken = (who: SignedIn) => who.cookie;

/** What a caller met: let in (whatever followed), or the refusal's code. The same on both sides. */
function outcomeOfPage(res: { status: number; text: string; headers: Record<string, unknown> }): string {
  if (res.status === 303 && String(res.headers.location).startsWith('/admin/login')) return 'anonymous';
  if (res.status !== 403) return 'allowed';
  // The page says the refusal in words; its code is kept in the alert's data-code.
  return `refused ${/data-code="(AUTH_[A-Z_]+)"/.exec(res.text)?.[1] ?? '?'}`;
}
function outcomeOfApi(res: { status: number; body: { code?: string } }): string {
  if (res.status === 401) return 'anonymous';
  return res.status === 403 ? `refused ${res.body.code}` : 'allowed';
}

let n = 0;

/**
 * Each generated page beside the API route it mirrors. The API gets valid bodies (derived from the
 * schemas, as the conformance suite does), so its guard, not its validation, answers; items are an
 * unknown id, which the guard answers before any row is read.
 */
async function pairs(entity: ResolvedEntity, tenant: TenantRef) {
  const base = entity.names.adminPath;
  const api = entity.names.path;
  const id = randomUUID();
  const { def } = entity;
  const createBody = async () => ({
    ...(checkedSample(entity.schemas.create, ++n, 'create') as object),
    ...(await createSample(app.services, tenant, entity.names.key, n)),
  });
  const patchField = entity.patchable[0]!;
  const patchBody = { [patchField]: sampleValue(def.fields[patchField]!, ++n) };
  const commandBody = async (command: string) => {
    const schema = def.commands?.[command]?.body;
    if (!schema) return undefined;
    const hint = await commandSample(app.services, tenant, entity.names.key, command, n);
    return { ...(checkedSample(schema, ++n, command) as object), ...hint };
  };
  const list: { page: [string, string]; api: [string, string, object?] }[] = [
    { page: ['GET', base], api: ['GET', api] },
    { page: ['GET', `${base}/rows`], api: ['GET', api] },
    { page: ['GET', `${base}/new`], api: ['POST', api, await createBody()] },
    { page: ['POST', `${base}/new`], api: ['POST', api, await createBody()] },
    { page: ['GET', `${base}/${id}`], api: ['GET', `${api}/${id}`] },
    { page: ['GET', `${base}/${id}/edit`], api: ['PATCH', `${api}/${id}`, patchBody] },
    { page: ['POST', `${base}/${id}/edit`], api: ['PATCH', `${api}/${id}`, patchBody] },
    { page: ['GET', `${base}/${id}/delete`], api: ['DELETE', `${api}/${id}`] },
    { page: ['POST', `${base}/${id}/delete`], api: ['DELETE', `${api}/${id}`] },
  ];
  for (const command of Object.keys(def.commands ?? {})) {
    const body = await commandBody(command);
    list.push({ page: ['GET', `${base}/${id}/${command}`], api: ['POST', `${api}/${id}/${command}`, body] });
    list.push({ page: ['POST', `${base}/${id}/${command}`], api: ['POST', `${api}/${id}/${command}`, body] });
  }
  return list;
}

async function pageAs(who: SignedIn | null, method: string, path: string, host = HOST) {
  const http = app.http(host);
  if (method === 'GET') return who ? http.get(path).set('Cookie', who.cookie) : http.get(path);
  const req = http.post(path).type('form');
  return (who ? req.set('Cookie', withToken(who)) : req).send({ csrf: who ? csrfOf(who) : 'T'.repeat(43) });
}
async function apiAs(who: SignedIn | null, method: string, path: string, body?: object, host = HOST) {
  const http = app.http(host);
  const req =
    method === 'GET'
      ? http.get(path)
      : method === 'POST'
        ? http.post(path)
        : method === 'PATCH'
          ? http.patch(path)
          : http.delete(path);
  if (who) req.set('Cookie', who.cookie);
  return body ? req.send(body) : method === 'POST' ? req.send({}) : req;
}

describe('Generated pages: each page and post is authorised exactly as its API route', () => {
  it('generates screens for tasks, content, users and plans, and none for files, notifications, tenants, roles or the subscription', () => {
    const keys = generatedResources(app.services.registry).map((e) => e.names.key);
    expect(keys).toEqual(expect.arrayContaining(['task.task', 'content.content', 'user.user', 'billing.plan']));
    expect(keys.filter((k) => /^(file|notification|tenant|auth)\./.test(k) || k === 'billing.subscription')).toEqual(
      [],
    );
  });

  // Hundreds of requests (every page and post for four callers): 20 s alone on a loaded machine,
  // past the default 30 s when the whole suite runs beside it. No time is asserted.
  it('gives every caller the same answer on every generated page as on its API route: nobody, a reader, a writer, and a customer facing operator-only plans', {
    timeout: 120_000,
  }, async () => {
    const callers: Record<string, SignedIn | null> = {
      anonymous: null,
      member: await signInAs(app, acme, []),
      reader: await signInAs(app, acme, [
        'task:read',
        'content:read',
        'user:read',
        'billing:read',
        'widget:read',
        'article:read',
      ]),
      admin: await signInAs(app, acme, ['*']),
    };
    const seen = new Set<string>();
    for (const entity of generatedResources(app.services.registry)) {
      for (const pair of await pairs(entity, acme)) {
        for (const [name, who] of Object.entries(callers)) {
          const page = outcomeOfPage(await pageAs(who, ...pair.page));
          const api = outcomeOfApi(await apiAs(who, ...pair.api));
          expect(page, `${name}: ${pair.page.join(' ')} against ${pair.api[0]} ${pair.api[1]}`).toBe(api);
          seen.add(`${entity.names.key} ${name} ${page}`);
        }
      }
    }
    // The comparison met every kind of answer: refusals of each sort and pages let in.
    expect(seen).toContain('task.task anonymous anonymous');
    expect(seen).toContain('task.task member refused AUTH_FORBIDDEN');
    expect(seen).toContain('task.task reader allowed');
    expect(seen).toContain('task.task reader refused AUTH_FORBIDDEN');
    expect(seen).toContain('billing.plan admin refused AUTH_NOT_OPERATOR');
    expect(seen).toContain('billing.plan reader allowed');
  });

  it('gives every caller the same answer on the history and restore pages as on their API routes', async () => {
    const callers: Record<string, SignedIn | null> = {
      anonymous: null,
      member: await signInAs(app, acme, []),
      reader: await signInAs(app, acme, ['task:read', 'content:read', 'user:read', 'billing:read', 'widget:read']),
      admin: await signInAs(app, acme, ['*']),
    };
    const seen = new Set<string>();
    for (const entity of generatedResources(app.services.registry)) {
      if (entity.def.history === false) continue;
      const base = entity.names.adminPath;
      const api = entity.names.path;
      const id = randomUUID();
      const revision = randomUUID();
      const pairs: { page: [string, string]; api: [string, string, object?] }[] = [
        { page: ['GET', `${base}/${id}/history`], api: ['GET', `${api}/${id}/history`] },
        {
          page: ['GET', `${base}/${id}/restore?revision=${revision}`],
          api: ['POST', `${api}/${id}/restore`, { revision }],
        },
        {
          page: ['POST', `${base}/${id}/restore?revision=${revision}`],
          api: ['POST', `${api}/${id}/restore`, { revision }],
        },
      ];
      for (const pair of pairs) {
        for (const [name, who] of Object.entries(callers)) {
          const page = outcomeOfPage(await pageAs(who, ...pair.page));
          const answer = outcomeOfApi(await apiAs(who, ...pair.api));
          expect(page, `${name}: ${pair.page.join(' ')} against ${pair.api[0]} ${pair.api[1]}`).toBe(answer);
          seen.add(`${entity.names.key} ${name} ${page}`);
        }
      }
    }
    expect(seen).toContain('task.task anonymous anonymous');
    expect(seen).toContain('task.task member refused AUTH_FORBIDDEN');
    expect(seen).toContain('task.task reader allowed');
    expect(seen).toContain('task.task reader refused AUTH_FORBIDDEN');
    expect(seen).toContain('billing.plan admin refused AUTH_NOT_OPERATOR');
  });

  it('answers a member without task:read a 403 page that shows none of the task', async () => {
    const admin = await signInAs(app, acme, ['*']);
    const created = await app
      .http(HOST)
      .post('/api/v1/task/tasks')
      .set('Cookie', admin.cookie)
      .send({ title: 'Secret plans', priority: 'low', deadline: '2031-01-01T00:00:00Z' });
    expect(created.status).toBe(201);
    const member = await signInAs(app, acme, []);
    for (const path of ['/admin/task/tasks', `/admin/task/tasks/${created.body.id}`, `/admin/task/tasks/rows`]) {
      const res = await app.http(HOST).get(path).set('Cookie', member.cookie);
      expect(res.status, path).toBe(403);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).not.toContain('Secret plans');
    }
  });
});

describe('Generated pages: every form post carries a CSRF token and passes the cross-site check', () => {
  it('refuses a form post without the token (403 AUTH_CROSS_SITE) and creates nothing', async () => {
    const admin = await signInAs(app, acme, ['*']);
    const res = await app
      .http(HOST)
      .post('/admin/task/tasks/new')
      .set('Cookie', admin.cookie)
      .type('form')
      .send({ title: 'No token', priority: 'low', deadline: '2031-01-01T00:00' });
    expect(res.status).toBe(403);
    expect(res.text).toContain('AUTH_CROSS_SITE');
    const wrong = await app
      .http(HOST)
      .post('/admin/task/tasks/new')
      .set('Cookie', withToken(admin))
      .type('form')
      .send({ csrf: 'W'.repeat(43), title: 'No token', priority: 'low', deadline: '2031-01-01T00:00' });
    expect(wrong.status).toBe(403);
    const list = await app.http(HOST).get('/api/v1/task/tasks').set('Cookie', admin.cookie);
    expect(list.body.items.map((t: { title: string }) => t.title)).not.toContain('No token');
  });

  it('refuses a form post another site sent, token and all (403 AUTH_CROSS_SITE)', async () => {
    const admin = await signInAs(app, acme, ['*']);
    for (const headers of [
      { 'Sec-Fetch-Site': 'cross-site' },
      { 'Sec-Fetch-Site': 'same-site' },
      { Origin: 'http://evil.example' },
    ]) {
      const res = await app
        .http(HOST)
        .post('/admin/task/tasks/new')
        .set('Cookie', withToken(admin))
        .set(headers)
        .type('form')
        .send({ csrf: csrfOf(admin), title: 'Forged', priority: 'low', deadline: '2031-01-01T00:00' });
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(res.text).toContain('AUTH_CROSS_SITE');
    }
  });

  it('takes only forms: a JSON body posted to an admin form target is 415', async () => {
    const admin = await signInAs(app, acme, ['*']);
    const res = await app
      .http(HOST)
      .post('/admin/task/tasks/new')
      .set('Cookie', admin.cookie)
      .send({ title: 'JSON', priority: 'low', deadline: '2031-01-01T00:00:00Z' });
    expect(res.status).toBe(415);
  });
});

describe('Generated pages: files, notifications, tenants and the subscription have no generated screens', () => {
  // Their screens are hand-written (/admin/file/files, /admin/notification/notifications and
  // /admin/billing/subscription: test/browser/admin-tenant-screens.test.ts); nothing generated
  // answers beside them.
  it('answers 404 for their would-be generated paths', async () => {
    const admin = await signInAs(app, acme, ['*']);
    const operatorAdmin = await signInAs(app, app.operator, ['*']);
    for (const path of [
      '/admin/file/files/new',
      '/admin/notification/notifications/rows',
      '/admin/billing/subscriptions',
      '/admin/billing/subscription/new',
    ]) {
      expect((await app.http(HOST).get(path).set('Cookie', admin.cookie)).status, path).toBe(404);
    }
    for (const path of ['/admin/tenant/tenants/new', '/admin/tenant/tenants/rows']) {
      expect((await app.http().get(path).set('Cookie', operatorAdmin.cookie)).status, path).toBe(404);
    }
  });
});

describe('Generated pages: forms', () => {
  it('creates through the form (303 to the detail page), edits, runs a command and deletes, as the API would', async () => {
    const admin = await signInAs(app, acme, ['*']);
    const http = app.http(HOST);
    const created = await http
      .post('/admin/content/contents/new')
      .set('Cookie', withToken(admin))
      .type('form')
      .send({ csrf: csrfOf(admin), slug: 'hello-form', title: 'Hello', kind: 'page', body: '# Hi' });
    expect(created.status).toBe(303);
    const detail = created.headers.location as string;
    expect(detail).toMatch(/^\/admin\/content\/contents\/[0-9a-f-]{36}$/);
    const id = detail.split('/').pop()!;
    const edited = await http
      .post(`${detail}/edit`)
      .set('Cookie', withToken(admin))
      .type('form')
      .send({ csrf: csrfOf(admin), title: 'Hello again', kind: 'post', body: '# Hi' });
    expect(edited.status).toBe(303);
    const published = await http
      .post(`${detail}/publish`)
      .set('Cookie', withToken(admin))
      .type('form')
      .send({ csrf: csrfOf(admin) });
    expect(published.status).toBe(303);
    const read = await http.get(`/api/v1/content/contents/${id}`).set('Cookie', admin.cookie);
    expect(read.body).toMatchObject({ title: 'Hello again', kind: 'post', status: 'published', slug: 'hello-form' });
    const page = await http.get(detail).set('Cookie', admin.cookie);
    expect(page.text).toContain('Hello again');
    const removed = await http
      .post(`${detail}/delete`)
      .set('Cookie', withToken(admin))
      .type('form')
      .send({ csrf: csrfOf(admin) });
    expect(removed.status).toBe(303);
    expect(removed.headers.location).toBe('/admin/content/contents');
    expect((await http.get(`/api/v1/content/contents/${id}`).set('Cookie', admin.cookie)).status).toBe(404);
  });

  it('shows validation errors inline beside their fields, from the problem document, keeping what was typed', async () => {
    const admin = await signInAs(app, acme, ['*']);
    const res = await app
      .http(HOST)
      .post('/admin/content/contents/new')
      .set('Cookie', withToken(admin))
      .type('form')
      .send({ csrf: csrfOf(admin), slug: 'Not A Slug!', title: 'Kept title', kind: 'page', body: 'x' });
    expect(res.status).toBe(422);
    expect(res.text).toMatch(/id="field-slug-field"[\s\S]*?class="error-text" id="field-slug-error">[^<]+</);
    expect(res.text).toContain('aria-invalid="true"');
    expect(res.text).toContain('value="Kept title"');
    expect(res.text).toContain('SLUG_INVALID');
  });

  it('answers htmx a form fragment with the errors (422), and a successful post with HX-Redirect', async () => {
    const admin = await signInAs(app, acme, ['*']);
    const bad = await app
      .http(HOST)
      .post('/admin/task/tasks/new')
      .set('Cookie', withToken(admin))
      .set('HX-Request', 'true')
      .type('form')
      .send({ csrf: csrfOf(admin), title: '', priority: 'low', deadline: '2031-01-01T00:00' });
    expect(bad.status).toBe(422);
    expect(bad.text.trimStart()).toMatch(/^<form /);
    expect(bad.text).toContain('id="field-title-error"');
    const good = await app
      .http(HOST)
      .post('/admin/task/tasks/new')
      .set('Cookie', withToken(admin))
      .set('HX-Request', 'true')
      .type('form')
      .send({ csrf: csrfOf(admin), title: 'By htmx', priority: 'low', deadline: '2031-01-01T00:00' });
    expect(good.status).toBe(200);
    expect(good.headers['hx-redirect']).toMatch(/^\/admin\/task\/tasks\/[0-9a-f-]{36}$/);
  });

  it('reads a datetime-local value as UTC', async () => {
    const admin = await signInAs(app, acme, ['*']);
    const res = await app
      .http(HOST)
      .post('/admin/task/tasks/new')
      .set('Cookie', withToken(admin))
      .type('form')
      .send({ csrf: csrfOf(admin), title: 'UTC', priority: 'low', deadline: '2031-05-06T07:08' });
    const id = (res.headers.location as string).split('/').pop();
    const read = await app.http(HOST).get(`/api/v1/task/tasks/${id}`).set('Cookie', admin.cookie);
    expect(read.body.deadline).toBe('2031-05-06T07:08:00.000Z');
  });

  it('renders command-owned and immutable fields read-only, and commands as buttons', async () => {
    const admin = await signInAs(app, acme, ['*']);
    const created = await app
      .http(HOST)
      .post('/api/v1/content/contents')
      .set('Cookie', admin.cookie)
      .send({ slug: 'read-only-check', title: 'RO', kind: 'page', body: 'x' });
    const edit = await app
      .http(HOST)
      .get(`/admin/content/contents/${created.body.id}/edit`)
      .set('Cookie', admin.cookie);
    expect(edit.status).toBe(200);
    // status belongs to the commands: shown, not an input.
    expect(edit.text).not.toMatch(/name="status"/);
    expect(edit.text).toMatch(/<span class="label">Status<\/span>\s*<span class="readonly">Draft<\/span>/);
    const detail = await app.http(HOST).get(`/admin/content/contents/${created.body.id}`).set('Cookie', admin.cookie);
    // A draft offers the commands its state table lets act on it (issue 35, point 4): not unpublish.
    for (const command of ['publish', 'archive'])
      expect(detail.text).toContain(`href="/admin/content/contents/${created.body.id}/${command}"`);
    expect(detail.text).not.toContain(`href="/admin/content/contents/${created.body.id}/unpublish"`);
  });

  it('pages and sorts through the list parameters, and the rows fragment is the table alone', async () => {
    const admin = await signInAs(app, acme, ['*']);
    for (const title of ['Alpha', 'Bravo', 'Charlie']) {
      await app
        .http(HOST)
        .post('/api/v1/task/tasks')
        .set('Cookie', admin.cookie)
        .send({ title: `Paged ${title}`, priority: 'low', deadline: '2031-01-01T00:00:00Z' });
    }
    const page = await app.http(HOST).get('/admin/task/tasks?sort=-title&limit=1').set('Cookie', admin.cookie);
    expect(page.status).toBe(200);
    expect(page.text).toContain('aria-sort="descending"');
    expect(page.text).toMatch(/href="\/admin\/task\/tasks\?sort=-title&amp;limit=1&amp;offset=1"/);
    const rows = await app.http(HOST).get('/admin/task/tasks/rows?sort=title&limit=2').set('Cookie', admin.cookie);
    expect(rows.text.trimStart()).toMatch(/^<div id="rows">/);
    expect(rows.text).not.toContain('<html');
    const bad = await app.http(HOST).get('/admin/task/tasks?sort=nonsense').set('Cookie', admin.cookie);
    expect(bad.status).toBe(422);
  });

  it('a page past the end of a list says the list is not empty, and leads back to its last page', async () => {
    // A link to a later page outlives the rows it showed (deleted since, or an address typed).
    const host = 'pastend.localhost';
    const tenant = await createCustomer(app, 'pastend', host);
    const admin = await signInAs(app, tenant, ['*']);
    const task = (title: string) => ({ title, priority: 'low', deadline: '2031-01-01T00:00:00Z' });
    const made = await Promise.all(
      ['One', 'Two', 'Three'].map((t) =>
        app.http(host).post('/api/v1/task/tasks').set('Cookie', admin.cookie).send(task(t)),
      ),
    );
    expect(made.map((res) => res.status)).toEqual([201, 201, 201]);
    for (const path of ['/admin/task/tasks?limit=2&offset=10', '/admin/task/tasks/rows?limit=2&offset=10']) {
      const page = await app.http(host).get(path).set('Cookie', admin.cookie);
      expect(page.status, path).toBe(200);
      expect(page.text, path).not.toContain('No tasks yet.');
      expect(page.text, path).toContain('This page is past the end of the list: 3 tasks in all.');
      // Back to the last page (offset 2), not to offset 8, which is as empty.
      expect(page.text, path).toMatch(/<a rel="prev" href="\/admin\/task\/tasks\?limit=2&amp;offset=2"/);
    }
    const filtered = await app.http(host).get('/admin/task/tasks?limit=2&offset=10&q=o').set('Cookie', admin.cookie);
    expect(filtered.text).toContain('This page is past the end of the list: 2 tasks match these filters.');
    // A list with no rows at all still says so as before.
    const empty = await app.http(host).get('/admin/user/users?q=nobody-here').set('Cookie', admin.cookie);
    expect(empty.text).toContain('No users match these filters.');
  });

  it('offers a customer no write on operator-only plans: no buttons, and the write pages refuse with AUTH_NOT_OPERATOR', async () => {
    const operatorAdmin = await signInAs(app, app.operator, ['*']);
    const plan = await app
      .http()
      .post('/api/v1/billing/plans')
      .set('Cookie', operatorAdmin.cookie)
      .send({
        code: 'gold',
        name: 'Gold',
        price: 1000,
        currency: 'EUR',
        interval: 'month',
        features: ['webhook.endpoints'],
        active: true,
      });
    expect(plan.status).toBe(201);
    const customer = await signInAs(app, acme, ['*']);
    const list = await app.http(HOST).get('/admin/billing/plans').set('Cookie', customer.cookie);
    expect(list.text).toContain('Gold');
    expect(list.text).not.toContain('/admin/billing/plans/new');
    expect((await app.http(HOST).get('/admin/billing/plans/new').set('Cookie', customer.cookie)).text).toContain(
      'AUTH_NOT_OPERATOR',
    );
    const detail = await app.http(HOST).get(`/admin/billing/plans/${plan.body.id}`).set('Cookie', customer.cookie);
    expect(detail.status).toBe(200);
    const main = detail.text.slice(detail.text.indexOf('<main'));
    expect(main).toContain('Gold');
    expect(main).not.toMatch(/\/edit"|\/delete"|class="button/);
    const edit = await app.http(HOST).get(`/admin/billing/plans/${plan.body.id}/edit`).set('Cookie', customer.cookie);
    expect(edit.status).toBe(403);
    expect(edit.text).toContain('AUTH_NOT_OPERATOR');
    // The operator's own admin has them.
    const own = await app.http().get(`/admin/billing/plans/${plan.body.id}`).set('Cookie', operatorAdmin.cookie);
    expect(own.text).toContain(`/admin/billing/plans/${plan.body.id}/edit`);
  });
});

describe('Generated pages: a password field', () => {
  it('is typed as one, and a refused post never sends the password back', async () => {
    const admin = await signInAs(app, acme, ['*']);
    const person = await signInAs(app, acme, ['task:read']);
    const path = `/admin/user/users/${person.userId}/set-password`;
    const page = await app.http(HOST).get(path).set('Cookie', admin.cookie);
    expect(page.status).toBe(200);
    expect(page.text).toMatch(/<input type="password" id="field-password" name="password" value=""/);
    const typed = 'Sh0rt!pw';
    const refused = await app
      .http(HOST)
      .post(path)
      .set('Cookie', admin.cookie)
      .type('form')
      .send({ csrf: csrfOf(admin), password: 'x'.repeat(1025) + typed });
    expect(refused.status).toBe(422);
    expect(refused.text).toMatch(/<input type="password" id="field-password" name="password" value=""/);
    expect(refused.text).not.toContain(typed);
  });
});

describe('Admin shell: the header', () => {
  it("shows the caller's unread notification count in the badge", async () => {
    const admin = await signInAs(app, acme, ['*']);
    await app.services.transactions.run(acme, async (ctx) => {
      await notify(ctx, { recipientId: admin.userId, title: 'One', body: '', link: '/admin', email: false });
      await notify(ctx, { recipientId: admin.userId, title: 'Two', body: '', link: '/admin', email: false });
    });
    const page = await app.http(HOST).get('/admin/task/tasks').set('Cookie', admin.cookie);
    expect(page.text).toMatch(
      /<span id="header-badge" class="header-badge"(?! hidden)[^>]*>[\s\S]*?aria-label="2 unread notifications">2</,
    );
  });

  it('signs out from the header: the session ends and the browser goes to the login page', async () => {
    const admin = await signInAs(app, acme, ['*']);
    const res = await app
      .http(HOST)
      .post('/admin/logout')
      .set('Cookie', withToken(admin))
      .type('form')
      .send({ csrf: csrfOf(admin) });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/admin/login');
    expect((await app.http(HOST).get('/api/v1/auth/me').set('Cookie', admin.cookie)).status).toBe(401);
  });
});
