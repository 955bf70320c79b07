import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signInAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { allModules } from '../../modules/index.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { defineModule } from '../../framework/entity/define.ts';

let app: TestApp;
const logLines: string[] = [];

beforeAll(async () => {
  // A module whose sidebar entry names a path nothing serves.
  const ghostModule = defineModule({
    name: 'ghost',
    admin: { sidebar: [{ label: 'Ghosts', path: '/admin/ghost/ghosts', order: 35 }] },
  });
  const logger = pino(
    { level: 'warn' },
    { write: (line: string) => void logLines.push(line) },
  ) as unknown as FastifyBaseLogger;
  app = await startTestApp({ modules: [...allModules, testkitModule, ghostModule], logger });
});
afterAll(async () => {
  await app?.close();
});

describe('Admin shell: static files come from node_modules and one style sheet', () => {
  it('serves htmx 4 and the style sheet at stable URLs, revalidated by ETag', async () => {
    const htmx = await app.http().get('/admin/_assets/htmx.min.js');
    expect(htmx.status).toBe(200);
    expect(htmx.headers['content-type']).toMatch(/^text\/javascript/);
    expect(htmx.text).toContain('htmx');
    const css = await app.http().get('/admin/_assets/admin.css');
    expect(css.status).toBe(200);
    expect(css.headers['content-type']).toMatch(/^text\/css/);
    const again = await app.http().get('/admin/_assets/admin.css').set('If-None-Match', css.headers.etag!);
    expect(again.status).toBe(304);
  });
});

describe('Admin shell: an anonymous browser is sent to /admin/login', () => {
  it('redirects any /admin page, with the path and query as next', async () => {
    for (const path of ['/admin', '/admin/task/tasks?sort=-createdAt', '/admin/no/such/page']) {
      const res = await app.http().get(path);
      expect(res.status, path).toBe(303);
      expect(res.headers.location).toBe(`/admin/login?next=${encodeURIComponent(path)}`);
    }
  });

  it('sends htmx, asking for part of a page, to sign in with the page it shows as next, not the fragment', async () => {
    const rows = await app
      .http()
      .get('/admin/task/tasks/rows?offset=20')
      .set('hx-request', 'true')
      .set('hx-current-url', 'http://localhost/admin/task/tasks?sort=-createdAt&offset=20');
    expect(rows.status).toBe(200);
    expect(rows.headers['hx-redirect']).toBe(
      `/admin/login?next=${encodeURIComponent('/admin/task/tasks?sort=-createdAt&offset=20')}`,
    );
    // A page outside the shell (or no address at all) is no page to come back to: the address asked is.
    for (const current of ['http://localhost/api/v1/task/tasks', 'not an address']) {
      const posted = await app
        .http()
        .post('/admin/task/tasks/new?x=1')
        .type('form')
        .send({ title: 'x' })
        .set('hx-request', 'true')
        .set('hx-current-url', current);
      expect(posted.headers['hx-redirect'], current).toBe(
        `/admin/login?next=${encodeURIComponent('/admin/task/tasks/new')}`,
      );
    }
  });

  it('does not redirect the assets', async () => {
    expect((await app.http().get('/admin/_assets/admin.css')).status).toBe(200);
  });
});

describe('Admin shell: a sidebar entry whose path no route serves is reported once at startup', () => {
  it('warns once naming the entry, and not for served entries', () => {
    const warnings = logLines
      .map((line) => JSON.parse(line) as { msg: string; path?: string })
      .filter((l) => l.msg.startsWith('admin sidebar'));
    expect(warnings.filter((w) => w.path === '/admin/ghost/ghosts')).toHaveLength(1);
    expect(warnings.filter((w) => w.path === '/admin/task/tasks')).toHaveLength(0);
  });

  it('does not show the unserved entry, even to a caller holding every permission', async () => {
    const me = await signInAs(app, app.operator, ['*']);
    const page = await app.http().get('/admin/task/tasks').set('Cookie', me.cookie);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<a href="/admin/task/tasks" aria-current="page">Tasks</a>');
    expect(page.text).not.toContain('/admin/ghost/ghosts');
  });

  it('lists the entries the modules contribute by their order, whatever the module order', async () => {
    const me = await signInAs(app, app.operator, ['*']);
    const page = await app.http().get('/admin').set('Cookie', me.cookie);
    const nav = /<nav class="sidebar"[^>]*>([\s\S]*?)<\/nav>/.exec(page.text)?.[1] ?? '';
    const labels = [...nav.matchAll(/<a href="\/admin\/[^"]+"(?: aria-current="page")?>([^<]+)<\/a>/g)].map(
      (m) => m[1],
    );
    // By order, not in module order (user, auth, notification, tenant, task, billing, content, ...).
    const product = ['Users', 'Roles', 'Pages and posts', 'Tasks', 'Plans', 'Tenants'];
    expect(labels.filter((label) => product.includes(label!))).toEqual(product);
  });
});

describe('Admin shell: the layout', () => {
  it("answers a signed-in caller's unknown admin path with a 404 page in the layout: landmarks, skip link, badge, sign-out", async () => {
    const me = await signInAs(app, app.operator, ['*']);
    const res = await app.http().get('/admin/no/such/page').set('Cookie', me.cookie);
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('<a class="skip-link" href="#main">');
    expect(res.text).toMatch(/<nav class="sidebar" aria-label="Main">/);
    expect(res.text).toMatch(/<main id="main"/);
    expect(res.text).toContain('action="/admin/logout"');
    // The badge is there to be swapped in place, and hidden at zero (issue 42, point 5).
    expect(res.text).toMatch(
      /<span id="header-badge" class="header-badge" hidden(?: [^>]*)?>[\s\S]*?aria-label="0 unread notifications"/,
    );
    // Scripts only from the shell's asset folder on the host asked, not from the whole origin.
    expect(res.headers['content-security-policy']).toMatch(/(^|; )script-src [^ ;]+\/admin\/_assets\/(;|$)/);
    expect(res.headers['x-frame-options']).toBe('DENY');
  });
});
