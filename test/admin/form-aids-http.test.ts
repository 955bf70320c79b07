import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionFormToken } from '../../framework/access/form-token.ts';
import { SEARCH_MAX_LENGTH } from '../../framework/operations/page-query.ts';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

/**
 * Issue 35, points 2 and 3, over HTTP: a form's Preview and Search buttons post the form back and
 * get the same form (200, nothing saved, the typed values kept); the preview is sanitised; through
 * htmx the Preview answers the form alone, and the picker's fragment (GET <list>/options) answers
 * with its access.
 */

let app: TestApp;
let acme: TenantRef;
let admin: SignedIn;
let reader: SignedIn;
const HOST = 'aids-acme.localhost';

beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'aids-acme', HOST);
  admin = await signInAs(app, acme, ['*'], { email: 'admin@aids.test' });
  reader = await signInAs(app, acme, ['task:read']);
});
afterAll(async () => {
  await app?.close();
});

const csrf = (who: SignedIn) => sessionFormToken(who.rawSessionId);
const countContents = async () =>
  (await app.http(HOST).get('/api/v1/content/contents').set('Cookie', admin.cookie).expect(200)).body.total as number;

describe('the Preview button of a Markdown field, without JavaScript', () => {
  it('answers the new form again with the preview, sanitised, and the typed values; nothing is created', async () => {
    const before = await countContents();
    const res = await app
      .http(HOST)
      .post('/admin/content/contents/new')
      .set('Cookie', admin.cookie)
      .type('form')
      .send({
        csrf: csrf(admin),
        slug: 'kept-slug',
        title: 'Kept title',
        kind: 'page',
        body: '**bold** <script>alert(1)</script>',
        _preview: 'body',
      });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('<strong>bold</strong>');
    expect(res.text).not.toContain('<script>alert(1)</script>');
    expect(res.text).toContain('value="kept-slug"');
    expect(res.text).toContain('action="/admin/content/contents/new"');
    expect(await countContents()).toBe(before);
  });
});

describe('the Preview button through htmx (issue 42: each rendering of the form shows only its own messages)', () => {
  it('answers the form alone, the named field rendered as detail pages do, sanitised, and no message', async () => {
    const before = await countContents();
    const res = await app
      .http(HOST)
      .post('/admin/content/contents/new')
      .set('Cookie', admin.cookie)
      .set('hx-request', 'true')
      .type('form')
      .send({
        csrf: csrf(admin),
        slug: 'htmx-preview',
        title: 'Filled since',
        kind: 'page',
        _preview: 'body',
        body: '# Title\n\n[x](javascript:alert(1)) <img src=x onerror=alert(1)>',
      });
    expect(res.status).toBe(200);
    // The form alone (htmx swaps it for the one on the page), not a whole page.
    expect(res.text.trimStart()).toMatch(/^<form /);
    // Two levels down, as on the detail page: under the page's own h1 and its sections' h2s.
    const preview = res.text.slice(res.text.indexOf('id="field-body-preview"'), res.text.indexOf('class="actions"'));
    expect(preview).toContain('<h3>Title</h3>');
    expect(preview).not.toMatch(/javascript:|onerror/);
    expect(res.text).not.toContain('error-text');
    expect(res.text).not.toContain('role="alert"');
    expect(await countContents()).toBe(before);
  });

  it('refuses a post without the form token', async () => {
    const res = await app
      .http(HOST)
      .post('/admin/content/contents/new')
      .set('Cookie', admin.cookie)
      .set('hx-request', 'true')
      .type('form')
      .send({ _preview: 'body', body: 'x' });
    expect(res.status).toBe(403);
  });
});

describe('GET /admin/user/users/options (the picker type-ahead)', () => {
  it('answers the option elements of the users whose address or name contains _q', async () => {
    const res = await app
      .http(HOST)
      .get('/admin/user/users/options')
      .query({ _q: 'ADMIN@aids' })
      .set('Cookie', admin.cookie);
    expect(res.status).toBe(200);
    expect(res.text).toContain(`<option value="${admin.userId}">admin@aids.test</option>`);
    expect(res.text).not.toContain(reader.userId);
  });

  it('is refused to a caller who may not list users', async () => {
    const res = await app.http(HOST).get('/admin/user/users/options').query({ _q: 'a' }).set('Cookie', reader.cookie);
    expect(res.status).toBe(403);
  });
});

describe('the Search button of a picker, without JavaScript', () => {
  it('answers the command form again with the matching people; nothing is assigned', async () => {
    const task = await app
      .http(HOST)
      .post('/api/v1/task/tasks')
      .set('Cookie', admin.cookie)
      .send({ title: 'Pick me', priority: 'low', deadline: '2099-01-01T00:00:00Z' })
      .expect(201);
    const res = await app
      .http(HOST)
      .post(`/admin/task/tasks/${task.body.id}/assign`)
      .set('Cookie', admin.cookie)
      .type('form')
      .send({ csrf: csrf(admin), assigneeId: '', _q: 'admin@aids', _search: 'assigneeId' });
    expect(res.status).toBe(200);
    expect(res.text).toContain(`<option value="${admin.userId}">admin@aids.test</option>`);
    expect(res.text).not.toContain(`<option value="${reader.userId}"`);
    // Its box takes no more than the type-ahead's route does (GET <list>/options refuses a longer
    // _q with 422, a whole error page where the options were): the browser stops the typing there.
    const box = /<input type="search" id="field-assigneeId-search"[^>]*>/.exec(res.text)?.[0];
    expect(box).toContain(`maxlength="${SEARCH_MAX_LENGTH}"`);
    const longest = await app
      .http(HOST)
      .get('/admin/user/users/options')
      .query({ _q: 'a'.repeat(SEARCH_MAX_LENGTH) })
      .set('Cookie', admin.cookie);
    expect(longest.status).toBe(200);
    const read = await app.http(HOST).get(`/api/v1/task/tasks/${task.body.id}`).set('Cookie', admin.cookie).expect(200);
    expect(read.body.assigneeId).toBeNull();
  });
});

describe('the search box of a generated list', () => {
  it('narrows the list with q, keeps q in its sort and paging links, and shows everything for an emptied box', async () => {
    for (const title of ['Search box alpha', 'Search box beta', 'Something else']) {
      await app
        .http(HOST)
        .post('/api/v1/task/tasks')
        .set('Cookie', admin.cookie)
        .send({ title, priority: 'low', deadline: '2099-01-01T00:00:00Z' })
        .expect(201);
    }
    const found = await app
      .http(HOST)
      .get('/admin/task/tasks')
      .query({ q: 'search BOX', limit: 1 })
      .set('Cookie', admin.cookie);
    expect(found.status).toBe(200);
    expect(found.text).toMatch(/<input type="search" id="list-search" name="q" value="search BOX"/);
    expect(found.text).toMatch(/Search box (alpha|beta)/);
    expect(found.text).not.toContain('Something else');
    // The title's sort link and the next page keep the search.
    expect(found.text).toMatch(/href="\/admin\/task\/tasks\?sort=title&amp;limit=1&amp;q=search\+BOX"/);
    expect(found.text).toMatch(/href="\/admin\/task\/tasks\?limit=1&amp;q=search\+BOX&amp;offset=1"/);
    const all = await app.http(HOST).get('/admin/task/tasks?q=').set('Cookie', admin.cookie);
    expect(all.status).toBe(200);
    expect(all.text).toContain('Something else');
  });
});
