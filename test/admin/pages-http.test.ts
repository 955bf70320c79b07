import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import supertest from 'supertest';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { outboxRows } from '../helpers/outbox.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { buildWeb } from '../../framework/http/web.ts';
import { sessionFormToken } from '../../framework/access/form-token.ts';

let app: TestApp;
let acme: TenantRef;
const ACME = 'acme.localhost';

beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'acme', ACME);
});
afterAll(async () => {
  await app?.close();
});

/** The CSRF cookie and token a form page set, for a post that follows it. */
async function formToken(path: string, cookie: string): Promise<{ cookie: string; csrf: string }> {
  const page = await app.http(ACME).get(path).set('Cookie', cookie);
  expect(page.status).toBe(200);
  const set = (page.headers['set-cookie'] as unknown as string[] | undefined) ?? [];
  // A signed-in page sets no cookie: its forms carry the session's own token.
  expect(set.find((c) => c.startsWith('app_csrf='))).toBeUndefined();
  const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)![1]!;
  return { cookie, csrf };
}

describe('fixed pages: an anonymous browser is sent to /admin/login?next=<the page>', () => {
  it('for the dashboard, health, a check, the gallery, the tenant switcher and the roles pages', async () => {
    for (const path of [
      '/admin',
      '/admin/health',
      '/admin/health/database',
      '/admin/_gallery',
      '/admin/auth/roles',
      '/admin/auth/roles/member',
    ]) {
      const res = await app.http(ACME).get(path);
      expect(res.status, path).toBe(303);
      expect(res.headers.location, path).toBe(`/admin/login?next=${encodeURIComponent(path)}`);
    }
    // The operator permission is refused first, on a customer host, as on the API route.
    expect((await app.http(ACME).get('/admin/tenant/tenants')).status).toBe(403);
    const operatorSide = await app.http().get('/admin/tenant/tenants');
    expect(operatorSide.status).toBe(303);
  });
});

describe('GET /admin/tenant/tenants: authorised exactly like GET /api/v1/tenant/tenants', () => {
  it('a customer host answers 403 AUTH_NOT_OPERATOR, even to its wildcard admin, as the API does', async () => {
    const admin = await signInAs(app, acme, ['*']);
    const page = await app.http(ACME).get('/admin/tenant/tenants').set('Cookie', admin.cookie);
    const api = await app.http(ACME).get('/api/v1/tenant/tenants').set('Cookie', admin.cookie);
    expect(api.body.code).toBe('AUTH_NOT_OPERATOR');
    expect(page.status).toBe(api.status);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.text).toContain('AUTH_NOT_OPERATOR');
    expect(page.text).not.toContain('data-tenant=');
  });

  it('an operator-tenant user without tenant:manage is refused (403), one with it sees every tenant', async () => {
    const reader = await signInAs(app, app.operator, ['user:read']);
    expect((await app.http().get('/admin/tenant/tenants').set('Cookie', reader.cookie)).status).toBe(403);
    const manager = await signInAs(app, app.operator, ['tenant:manage']);
    const res = await app.http().get('/admin/tenant/tenants').set('Cookie', manager.cookie);
    expect(res.status).toBe(200);
    expect(res.text).toContain('data-tenant="acme"');
    expect(res.text).toContain('data-host="acme.localhost"');
  });

  it('pages and sorts with the list parameters of the API route, refusing what it refuses', async () => {
    const manager = await signInAs(app, app.operator, ['tenant:manage']);
    const sorted = await app.http().get('/admin/tenant/tenants?sort=-slug&limit=1').set('Cookie', manager.cookie);
    expect(sorted.status).toBe(200);
    expect(sorted.text.match(/data-tenant="([^"]+)"/g)).toEqual(['data-tenant="operator"']);
    // Its links as ListFilters writes every list's (its sort and size kept, defaults left out): the
    // next page, each column's sort (from the first page, the sorted column's direction flipped).
    const next = /rel="next" href="([^"]+)"/.exec(sorted.text)?.[1]?.replaceAll('&amp;', '&');
    expect(next).toMatch(/^\/admin\/tenant\/tenants\?sort=-slug&limit=1&after=[^&]+$/);
    expect(sorted.text).toContain('<a href="/admin/tenant/tenants?sort=slug&amp;limit=1">Short name</a>');
    expect(sorted.text).toContain('<a href="/admin/tenant/tenants?sort=name&amp;limit=1">Name</a>');
    expect(sorted.text).not.toContain('>First page</a>');
    const second = await app.http().get(next!).set('Cookie', manager.cookie);
    expect(second.status).toBe(200);
    expect(second.text.match(/data-tenant="([^"]+)"/g)).toHaveLength(1);
    expect(second.text).not.toContain('data-tenant="operator"');
    // A later page links back to the first under the same order and size, and sorts from the first page.
    expect(second.text).toContain('<a href="/admin/tenant/tenants?sort=-slug&amp;limit=1">First page</a>');
    expect(second.text).toContain('<a href="/admin/tenant/tenants?sort=slug&amp;limit=1">Short name</a>');
    // A search and a filter stay on through sorting and paging.
    const searched = await app
      .http()
      .get('/admin/tenant/tenants?status=eq.active&q=o&sort=name&limit=1')
      .set('Cookie', manager.cookie);
    expect(searched.status).toBe(200);
    expect(searched.text).toContain(
      '<a href="/admin/tenant/tenants?status=eq.active&amp;q=o&amp;sort=-name&amp;limit=1">Name</a>',
    );
    expect((await app.http().get('/admin/tenant/tenants?sort=password').set('Cookie', manager.cookie)).status).toBe(
      422,
    );
  });
});

describe('POST /admin/tenant/tenants/<id>/hosts/remove: through the API route, refusing what it refuses', () => {
  it('a posted host the API refuses (it holds NUL: no such host, 404) is the same refusal on the page, and nothing is removed', async () => {
    const manager = await signInAs(app, app.operator, ['tenant:manage']);
    const api = await app
      .http()
      .delete(`/api/v1/tenant/tenants/${acme.id}/hosts/acme%00.localhost`)
      .set('Cookie', manager.cookie);
    expect(api.status).toBe(404);
    expect(api.body.code).toBe('NOT_FOUND');
    const page = await app
      .http()
      .post(`/admin/tenant/tenants/${acme.id}/hosts/remove`)
      .set('Cookie', manager.cookie)
      .type('form')
      .send(`csrf=${sessionFormToken(manager.rawSessionId)}&host=acme%00.localhost`);
    expect(page.status, page.text.slice(0, 300)).toBe(404);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    const tenant = await app.http().get(`/api/v1/tenant/tenants/${acme.id}`).set('Cookie', manager.cookie);
    expect(tenant.body.hosts).toEqual([{ host: ACME, primary: true }]);
  });
});

describe('GET /admin/health/<check>: one readiness check, an htmx fragment or a whole page', () => {
  it('answers htmx with the check’s line alone, and a plain navigation with the page around it', async () => {
    const me = await signInAs(app, acme, []);
    const fragment = await app
      .http(ACME)
      .get('/admin/health/database')
      .set('Cookie', me.cookie)
      .set('HX-Request', 'true');
    expect(fragment.status).toBe(200);
    expect(fragment.text.trim()).toMatch(
      /^<li class="check" id="check-database" data-check="database" data-ok="true">/,
    );
    expect(fragment.text).not.toContain('<html');
    const page = await app.http(ACME).get('/admin/health/database').set('Cookie', me.cookie);
    expect(page.text).toContain('<html');
    expect(page.text).toContain('data-ok="true"');
  });

  it('an unknown check is a 404 page', async () => {
    const me = await signInAs(app, acme, []);
    expect((await app.http(ACME).get('/admin/health/nope').set('Cookie', me.cookie)).status).toBe(404);
  });

  describe('with a failing check among those /ready runs', () => {
    let web: FastifyInstance;
    beforeAll(async () => {
      web = await buildWeb(app.services, {
        readinessChecks: [
          {
            name: 'queue',
            check: async () => {
              throw new Error('queue at 10.0.0.7 unreachable');
            },
          },
        ],
      });
      await web.ready();
    });
    afterAll(async () => {
      await web?.close();
    });
    const http = (host: string) => ({ get: (path: string) => supertest(web.server).get(path).set('Host', host) });

    it('lists the same checks as /ready, and shows the failure (its reason to the operator only)', async () => {
      const ready = await http(ACME).get('/ready');
      expect(ready.status).toBe(503);
      const customer = await signInAs(app, acme, []);
      const list = await http(ACME).get('/admin/health').set('Cookie', customer.cookie);
      expect([...list.text.matchAll(/hx-get="\/admin\/health\/([^"]+)"/g)].map((m) => m[1])).toEqual(
        ready.body.checks.map((c: { name: string }) => c.name),
      );
      const failed = await http(ACME)
        .get('/admin/health/queue')
        .set('Cookie', customer.cookie)
        .set('HX-Request', 'true');
      expect(failed.text).toContain('data-ok="false"');
      expect(failed.text).not.toContain('10.0.0.7');
      const operator = await signInAs(app, app.operator, []);
      const seen = await http('operator.localhost')
        .get('/admin/health/queue')
        .set('Cookie', operator.cookie)
        .set('HX-Request', 'true');
      expect(seen.text).toContain('queue at 10.0.0.7 unreachable');
    });
  });
});

describe('POST /admin/auth/roles/<name>: the role form, through the roles operation', () => {
  it('needs role:manage like the roles API: 403 without it', async () => {
    const reader = await signInAs(app, acme, ['user:read']);
    expect((await app.http(ACME).get('/admin/auth/roles').set('Cookie', reader.cookie)).status).toBe(403);
    expect((await app.http(ACME).get('/admin/auth/roles/member').set('Cookie', reader.cookie)).status).toBe(403);
  });

  it('saves the ticked permissions, publishes auth.role_set, and answers 303 back to the form', async () => {
    const manager = await signInAs(app, acme, ['role:manage']);
    const { cookie, csrf } = await formToken('/admin/auth/roles/member', manager.cookie);
    const res = await app
      .http(ACME)
      .post('/admin/auth/roles/member')
      .set('Cookie', cookie)
      .type('form')
      .send({ csrf, permissions: ['task:read', 'user:read'] });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/admin/auth/roles/member?saved=1');
    const api = await app.http(ACME).get('/api/v1/auth/roles').set('Cookie', manager.cookie);
    expect(api.body.items.find((r: { name: string }) => r.name === 'member').permissions).toEqual([
      'task:read',
      'user:read',
    ]);
    const events = (await outboxRows(app, 'auth.role_set')).filter((e) => e.payload.name === 'member');
    expect(events.at(-1)?.payload).toEqual({ name: 'member', before: [], after: ['task:read', 'user:read'] });
    // No box ticked: the role holds nothing.
    await app.http(ACME).post('/admin/auth/roles/member').set('Cookie', cookie).type('form').send({ csrf }).expect(303);
    expect(
      (await app.http(ACME).get('/api/v1/auth/roles').set('Cookie', manager.cookie)).body.items.find(
        (r: { name: string }) => r.name === 'member',
      ).permissions,
    ).toEqual([]);
  });

  it('refuses a post without the CSRF token, or from another site: 403 AUTH_CROSS_SITE, nothing changed', async () => {
    const manager = await signInAs(app, acme, ['role:manage']);
    const { cookie, csrf } = await formToken('/admin/auth/roles/member', manager.cookie);
    const missing = await app
      .http(ACME)
      .post('/admin/auth/roles/member')
      .set('Cookie', cookie)
      .type('form')
      .send({ permissions: 'task:read' });
    expect(missing.status).toBe(403);
    expect(missing.text).toContain('AUTH_CROSS_SITE');
    const crossSite = await app
      .http(ACME)
      .post('/admin/auth/roles/member')
      .set('Cookie', cookie)
      .set('Origin', 'http://evil.localhost')
      .type('form')
      .send({ csrf, permissions: 'task:read' });
    expect(crossSite.status).toBe(403);
    expect(
      (await app.http(ACME).get('/api/v1/auth/roles').set('Cookie', manager.cookie)).body.items.find(
        (r: { name: string }) => r.name === 'member',
      ).permissions,
    ).toEqual([]);
  });

  it('answers a refused list with the form again (422), the problem’s error beside the box it names', async () => {
    const manager = await signInAs(app, acme, ['role:manage']);
    const { cookie, csrf } = await formToken('/admin/auth/roles/member', manager.cookie);
    const operatorOnly = await app
      .http(ACME)
      .post('/admin/auth/roles/member')
      .set('Cookie', cookie)
      .type('form')
      .send({ csrf, permissions: ['task:read', 'billing:catalog'] });
    expect(operatorOnly.status).toBe(422);
    expect(operatorOnly.text).toContain('PERMISSION_OPERATOR_ONLY');
    expect(operatorOnly.text).toMatch(
      /<span class="error-text" id="perm-billing-catalog-error">operator permission billing:catalog<\/span>/,
    );
    // The posted choice is kept, so the person sees what was refused.
    expect(operatorOnly.text).toMatch(/value="task:read" checked/);
    const unknown = await app
      .http(ACME)
      .post('/admin/auth/roles/member')
      .set('Cookie', cookie)
      .type('form')
      .send({ csrf, permissions: 'made:up' });
    expect(unknown.status).toBe(422);
    expect(unknown.text).toContain('PERMISSION_UNKNOWN');
    expect(
      (await app.http(ACME).get('/api/v1/auth/roles').set('Cookie', manager.cookie)).body.items.find(
        (r: { name: string }) => r.name === 'member',
      ).permissions,
    ).toEqual([]);
  });

  it('the operator tenant may grant an operator permission through the same form', async () => {
    const manager = await signInAs(app, app.operator, ['role:manage']);
    const page = await app.http().get('/admin/auth/roles/member').set('Cookie', manager.cookie);
    expect(page.text).toMatch(/value="tenant:manage"(?! disabled)/);
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)![1]!;
    const res = await app
      .http()
      .post('/admin/auth/roles/member')
      .set('Cookie', manager.cookie)
      .type('form')
      .send({ csrf, permissions: 'tenant:manage' });
    expect(res.status).toBe(303);
  });

  it('an unknown role is a 404 page, on the form and on its post', async () => {
    const manager = await signInAs(app, acme, ['role:manage']);
    expect((await app.http(ACME).get('/admin/auth/roles/nobody').set('Cookie', manager.cookie)).status).toBe(404);
    const { cookie, csrf } = await formToken('/admin/auth/roles/member', manager.cookie);
    const post = await app
      .http(ACME)
      .post('/admin/auth/roles/nobody')
      .set('Cookie', cookie)
      .type('form')
      .send({ csrf });
    expect(post.status).toBe(404);
    expect(post.text).toContain('<h1>Not found</h1>');
  });
});

describe('POST /admin/auth/roles: a new role, from the roles list', () => {
  it('creates the role holding nothing (auth.role_set published) and opens its form', async () => {
    const manager = await signInAs(app, acme, ['role:manage']);
    const { cookie, csrf } = await formToken('/admin/auth/roles', manager.cookie);
    const res = await app
      .http(ACME)
      .post('/admin/auth/roles')
      .set('Cookie', cookie)
      .type('form')
      .send({ csrf, name: 'auditor' });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/admin/auth/roles/auditor');
    const api = await app.http(ACME).get('/api/v1/auth/roles').set('Cookie', manager.cookie);
    expect(api.body.items.find((r: { name: string }) => r.name === 'auditor')?.permissions).toEqual([]);
    expect(
      (await outboxRows(app, 'auth.role_set')).filter((e) => e.payload.name === 'auditor').map((e) => e.payload),
    ).toEqual([{ name: 'auditor', before: null, after: [] }]);
  });

  it('shows a refused name beside the field: 422 for a name outside the grammar, 409 for a taken one (never replaced)', async () => {
    const manager = await signInAs(app, acme, ['role:manage']);
    const { cookie, csrf } = await formToken('/admin/auth/roles', manager.cookie);
    const invalid = await app
      .http(ACME)
      .post('/admin/auth/roles')
      .set('Cookie', cookie)
      .type('form')
      .send({ csrf, name: 'Not A Name' });
    expect(invalid.status).toBe(422);
    expect(invalid.text).toMatch(/<span class="error-text" id="role-name-error">Lower-case letters/);
    expect(invalid.text).toContain('value="Not A Name"');
    const taken = await app
      .http(ACME)
      .post('/admin/auth/roles')
      .set('Cookie', cookie)
      .type('form')
      .send({ csrf, name: 'admin' });
    expect(taken.status).toBe(409);
    expect(taken.text).toMatch(/<span class="error-text" id="role-name-error">a role of this name exists<\/span>/);
    const api = await app.http(ACME).get('/api/v1/auth/roles').set('Cookie', manager.cookie);
    expect(api.body.items.find((r: { name: string }) => r.name === 'admin')?.permissions).toEqual(['*']);
    expect(api.body.items.map((r: { name: string }) => r.name)).not.toContain('Not A Name');
  });
});

describe('GET /admin/auth/roles: the list pages as every list page does', () => {
  it('links the next page as ListFilters writes it (its sort and size kept, defaults left out), in the shared pager', async () => {
    const manager = await signInAs(app, acme, ['role:manage']);
    const names = (text: string) => [...text.matchAll(/data-role="([^"]+)"/g)].map((m) => m[1]);
    const first = await app.http(ACME).get('/admin/auth/roles?limit=1&sort=-name').set('Cookie', manager.cookie);
    expect(first.status).toBe(200);
    const next = /<nav class="pager" aria-label="Pages">\s*<a rel="next" href="([^"]+)">Next page<\/a>/
      .exec(first.text)?.[1]
      ?.replaceAll('&amp;', '&');
    expect(next).toMatch(/^\/admin\/auth\/roles\?sort=-name&limit=1&after=[^&]+$/);
    const second = await app.http(ACME).get(next!).set('Cookie', manager.cookie);
    expect(second.status).toBe(200);
    const [a, b] = [names(first.text), names(second.text)];
    expect(a).toHaveLength(1);
    expect(b).toHaveLength(1);
    expect(b[0]! < a[0]!).toBe(true);
  });
});

describe('POST /admin/auth/cors-origins: the Web origins form replaces the whole list', () => {
  it('a post that carries no origins text, or the field twice, is refused with nothing stored', async () => {
    const admin = await signInAs(app, acme, ['*']);
    const { csrf } = await formToken('/admin/auth/cors-origins', admin.cookie);
    const post = (body: string) =>
      app
        .http(ACME)
        .post('/admin/auth/cors-origins')
        .set('Cookie', admin.cookie)
        .type('form')
        .send(`csrf=${encodeURIComponent(csrf)}${body}`);
    const stored = async () =>
      (await app.http(ACME).get('/api/v1/auth/cors-origins').set('Cookie', admin.cookie)).body.origins;
    const saved = await post(`&origins=${encodeURIComponent('https://app.example\nhttps://b.example')}`);
    expect(saved.status).toBe(303);
    expect(await stored()).toEqual(['https://app.example', 'https://b.example']);
    // A browser always sends the text area (empty to allow none): a post without it, or with it
    // twice, is no form of this page, and once read as an empty list it removed every origin.
    for (const body of ['', '&origins=https%3A%2F%2Fc.example&origins=https%3A%2F%2Fd.example']) {
      const refused = await post(body);
      expect(refused.status, body).toBe(400);
      expect(refused.headers['content-type']).toMatch(/^text\/html/);
      expect(refused.text).toContain('The form could not be read.');
      expect(await stored(), body).toEqual(['https://app.example', 'https://b.example']);
    }
    // An empty text area still clears the list, as documented.
    expect((await post('&origins=')).status).toBe(303);
    expect(await stored()).toEqual([]);
  });
});
