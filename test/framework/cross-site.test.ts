import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { STATE_CHANGING_METHODS } from '../../framework/access/cross-site.ts';

let app: TestApp;
let acme: TenantRef;
let admin: string;
let widgetId: string;

beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'acme');
  admin = (await signInAs(app, acme, ['*'])).cookie;
  widgetId = await app.services.transactions.run(
    acme,
    async (ctx) =>
      (
        await sql<{
          id: string;
        }>`insert into widgets (name, size, color) values ('kept', 1, 'red') returning id`.execute(ctx.db)
      ).rows[0]!.id,
  );
});
afterAll(async () => {
  await app?.close();
});

const http = () => app.http('acme.localhost');

type Method = 'post' | 'put' | 'patch' | 'delete' | 'get';
const send = (method: Method, url: string) => http()[method](url).set('Cookie', admin);

/** Every declared state-changing route, with its path parameters filled in. */
function stateChangingRoutes(): { method: Method; url: string; operationId: string }[] {
  return app.services.routes
    .filter(({ route }) => STATE_CHANGING_METHODS.has(route.method))
    .map(({ route }) => ({
      method: route.method.toLowerCase() as Method,
      url: route.url.replace(/:id\b/g, widgetId).replace(/:(\w+)/g, 'x'),
      operationId: route.operationId,
    }));
}

function operatorOnly(operationId: string): boolean {
  const { access } = app.services.routes.find(({ route }) => route.operationId === operationId)!.route;
  return typeof access === 'object' && app.services.registry.isOperatorPermission(access.permission);
}

async function stateOfAcme() {
  return app.services.transactions.run(acme, async (ctx) => ({
    widgets: (
      await sql<{
        name: string;
        size: number;
        approved: boolean;
      }>`select name, size, approved from widgets where deleted_at is null order by id`.execute(ctx.db)
    ).rows,
    users: (
      await sql<{ email: string; status: string }>`select email, status from users order by email`.execute(ctx.db)
    ).rows,
    roles: (await sql<{ name: string }>`select name from roles order by name`.execute(ctx.db)).rows,
    outbox: (await sql<{ n: number }>`select count(*)::int as n from outbox`.execute(ctx.db)).rows[0]!.n,
  }));
}

describe('cross-site writes are refused on every state-changing route', () => {
  it('covers POST, PUT, PATCH and DELETE routes of every kind (entity, command, hand-written, public, operator)', () => {
    const ids = stateChangingRoutes().map((r) => `${r.method} ${r.operationId}`);
    for (const expected of [
      'post testkit-widget-create',
      'patch testkit-widget-update',
      'delete testkit-widget-delete',
      'post testkit-widget-approve',
      'post user-user-invite',
      'put auth-role-put',
      'post auth-session-login',
      'post auth-password-forgot',
      'post auth-password-reset',
      'post auth-password-change',
      'post tenant-tenant-create',
    ]) {
      expect(ids).toContain(expected);
    }
  });

  it('a foreign Origin gets 403 AUTH_CROSS_SITE on each, and nothing is written', async () => {
    const before = await stateOfAcme();
    for (const route of stateChangingRoutes()) {
      for (const origin of ['https://evil.example', 'http://evil.localhost', 'null']) {
        const res = await send(route.method, route.url)
          .set('Origin', origin)
          .send({ email: 'victim@example.test', name: 'x', password: 'long enough password' });
        expect(res.status, `${route.operationId} from ${origin}`).toBe(403);
        // An operator route at a customer's host is refused as such before anything else.
        expect(res.body.code, route.operationId).toBe(
          operatorOnly(route.operationId) ? 'AUTH_NOT_OPERATOR' : 'AUTH_CROSS_SITE',
        );
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      }
    }
    expect(await stateOfAcme()).toEqual(before);
    // At the operator's own host, the operator routes meet the cross-site rule like any other.
    for (const route of stateChangingRoutes().filter((r) => operatorOnly(r.operationId))) {
      const res = await app.http()[route.method](route.url).set('Origin', 'https://evil.example').send({ name: 'x' });
      expect([res.status, res.body.code], `${route.operationId} at the operator host`).toEqual([
        403,
        'AUTH_CROSS_SITE',
      ]);
    }
  });

  it('Sec-Fetch-Site other than same-origin or none gets 403 AUTH_CROSS_SITE on each, whatever Origin says', async () => {
    for (const route of stateChangingRoutes()) {
      for (const site of ['same-site', 'cross-site']) {
        const res = await send(route.method, route.url)
          .set('Sec-Fetch-Site', site)
          .set('Origin', 'http://acme.localhost')
          .send({});
        expect(res.status, `${route.operationId} ${site}`).toBe(403);
        expect(res.body.code).toBe(operatorOnly(route.operationId) ? 'AUTH_NOT_OPERATOR' : 'AUTH_CROSS_SITE');
      }
    }
  });

  it('a sibling host of the same site is another origin (Lax cookies reach it, the rule does not let it through)', async () => {
    const res = await send('post', '/api/v1/user/invitations')
      .set('Origin', 'http://evil.acme.localhost')
      .send({ email: 'sibling@example.test', displayName: 'Sibling' });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('AUTH_CROSS_SITE');
    expect((await stateOfAcme()).users.map((u) => u.email)).not.toContain('sibling@example.test');
  });

  it('the same origin, a direct request (Sec-Fetch-Site none) and a client sending neither header pass', async () => {
    const create = (name: string) => send('post', '/api/v1/testkit/widgets').send({ name, size: 1, color: 'blue' });
    expect((await create('no headers')).status).toBe(201);
    expect((await create('same origin').set('Sec-Fetch-Site', 'same-origin')).status).toBe(201);
    expect((await create('typed in').set('Sec-Fetch-Site', 'none')).status).toBe(201);
    expect((await create('origin with port').set('Origin', 'http://acme.localhost:3000')).status).toBe(201);
  });

  it('reads are not refused: a GET from another origin is answered', async () => {
    const res = await send('get', '/api/v1/testkit/widgets')
      .set('Origin', 'https://evil.example')
      .set('Sec-Fetch-Site', 'cross-site');
    expect(res.status).toBe(200);
  });

  it('the refusal comes before the body is read, validation and the guard; only the operator rule comes first', async () => {
    // No cookie and an invalid body: still the cross-site refusal first.
    const res = await http()
      .post('/api/v1/testkit/widgets')
      .set('Origin', 'https://evil.example')
      .send({ nonsense: true });
    expect([res.status, res.body.code]).toEqual([403, 'AUTH_CROSS_SITE']);
    // A body over the route's limit is never read: the refusal is the cross-site one, not 413.
    const large = await http()
      .post('/api/v1/testkit/notes')
      .set('Origin', 'https://evil.example')
      .send({ text: 'x'.repeat(500) });
    expect([large.status, large.body.code]).toEqual([403, 'AUTH_CROSS_SITE']);
    // An operator route on a customer host is refused as such before anything else.
    const operator = await http()
      .post('/api/v1/tenant/tenants')
      .set('Origin', 'https://evil.example')
      .send({ nonsense: true });
    expect([operator.status, operator.body.code]).toEqual([403, 'AUTH_NOT_OPERATOR']);
  });
});

describe('the JSON API refuses form-encoded bodies', () => {
  it('415 UNSUPPORTED_MEDIA_TYPE on every state-changing route that is not a declared form target, and nothing is written', async () => {
    const formTargets = new Set(
      app.services.routes.filter(({ route }) => route.form).map(({ route }) => route.operationId),
    );
    // The reset page's form and the admin sign-in form (/admin/login) post to these two.
    expect([...formTargets].sort()).toEqual(['auth-password-reset', 'auth-session-login']);
    const before = await stateOfAcme();
    for (const route of stateChangingRoutes().filter((r) => !formTargets.has(r.operationId))) {
      const res = await send(route.method, route.url)
        .type('form')
        .send({ email: 'form@example.test', name: 'x', size: '1', color: 'red' });
      // An operator route at a customer's host is refused as such before its body is looked at.
      const expected = operatorOnly(route.operationId) ? [403, 'AUTH_NOT_OPERATOR'] : [415, 'UNSUPPORTED_MEDIA_TYPE'];
      expect([res.status, res.body.code], route.operationId).toEqual(expected);
    }
    expect(await stateOfAcme()).toEqual(before);
  });

  it('a content type with parameters or in capitals is the same media type', async () => {
    const res = await send('post', '/api/v1/testkit/widgets')
      .set('Content-Type', 'Application/X-WWW-Form-Urlencoded; charset=UTF-8')
      .send('name=a&size=1&color=red');
    expect(res.status).toBe(415);
  });

  it('the declared form target takes the form body, but only with its CSRF token', async () => {
    const res = await http()
      .post('/api/v1/auth/password/reset')
      .type('form')
      .send({ token: randomUUID(), password: 'long enough password' });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('AUTH_CROSS_SITE');
  });
});

/**
 * Issue 27, point 1: the admin form token is one per reply and bound to the session. A browser
 * that holds only its session cookie (after a restart, single sign-on or an API sign-in) posts its
 * first form; a pair minted without that session is refused.
 */
describe('the form token is bound to the session, one per reply', () => {
  const TASK_FORM = '/admin/task/tasks/new';
  const fields = (title: string) => ({ title, priority: 'low', deadline: '2031-01-01T00:00' });
  const csrfFields = (html: string) => [...html.matchAll(/name="csrf" value="([^"]*)"/g)].map((m) => m[1]!);
  const setCookies = (res: { headers: Record<string, unknown> }) =>
    (res.headers['set-cookie'] as string[] | undefined) ?? [];
  /** The app_csrf cookie a page set, as a Cookie header part ('' when it set none). */
  const csrfCookieOf = (res: { headers: Record<string, unknown> }) =>
    setCookies(res)
      .find((c) => c.startsWith('app_csrf='))
      ?.split(';', 1)[0] ?? '';
  const taskTitles = async () =>
    app.services.transactions.run(acme, async (ctx) =>
      (await sql<{ title: string }>`select title from tasks`.execute(ctx.db)).rows.map((r) => r.title),
    );

  async function expectRefusedPost(cookie: string, csrf: string, title: string): Promise<void> {
    const res = await http()
      .post(TASK_FORM)
      .set('Cookie', cookie)
      .type('form')
      .send({ csrf, ...fields(title) });
    expect(res.status, title).toBe(403);
    expect(res.text, title).toContain('AUTH_CROSS_SITE');
    expect(await taskTitles()).not.toContain(title);
  }

  it('a page gives every form the same token, sets no cookie, and a browser holding only the session cookie posts it', async () => {
    const page = await http().get(TASK_FORM).set('Cookie', admin);
    expect(page.status).toBe(200);
    const tokens = csrfFields(page.text);
    // The sign-out form in the header and the task form.
    expect(tokens.length).toBeGreaterThanOrEqual(2);
    expect(new Set(tokens).size).toBe(1);
    expect(csrfCookieOf(page)).toBe('');
    const res = await http()
      .post(TASK_FORM)
      .set('Cookie', admin)
      .type('form')
      .send({ csrf: tokens[0], ...fields('first post after a restart') });
    expect(res.status).toBe(303);
    expect(await taskTitles()).toContain('first post after a restart');
  });

  it('the shell takes only forms: a post that is none (JSON, or no body at all) is 415, and nothing runs without the token', async () => {
    const refused = async (res: { status: number; text: string }, what: string) => {
      expect(res.status, what).toBe(415);
      expect(res.text, what).toContain('UNSUPPORTED_MEDIA_TYPE');
    };
    // A page whose form fields are all optional: JSON, or no body, would set the role's permissions.
    const roleOf = async () =>
      (
        await app.services.transactions.run(acme, async (ctx) =>
          sql<{ permissions: string[] }>`select permissions from roles where name = 'member'`.execute(ctx.db),
        )
      ).rows[0]?.permissions;
    const before = await roleOf();
    const role = () => http().post('/admin/auth/roles/member').set('Cookie', admin);
    await refused(await role().send({ permissions: ['task:read', 'user:read'] }), 'a role as JSON');
    await refused(await role(), 'a role without a body');
    expect(await roleOf()).toEqual(before);
    // The sign-out form without its token, sent without a body: the session stays.
    await refused(await http().post('/admin/logout').set('Cookie', admin), 'sign-out without a body');
    expect((await http().get('/api/v1/auth/me').set('Cookie', admin)).status).toBe(200);
    await refused(await http().post(TASK_FORM).set('Cookie', admin).send(fields('posted as JSON')), 'a task as JSON');
    await refused(await http().post(TASK_FORM).set('Cookie', admin), 'a task without a body');
    expect(await taskTitles()).not.toContain('posted as JSON');
    // The sign-in form too (a JSON sign-in is the API's, POST /api/v1/auth/login).
    await refused(
      await http().post('/admin/login').send({ email: 'a@example.com', password: 'whatever it is' }),
      'a JSON sign-in through the shell',
    );
  });

  it('a pair minted for an anonymous visitor is refused with the session (403 AUTH_CROSS_SITE)', async () => {
    const login = await http().get('/admin/login');
    const [csrf] = csrfFields(login.text);
    expect(csrfCookieOf(login)).not.toBe('');
    await expectRefusedPost(`${admin}; ${csrfCookieOf(login)}`, csrf!, 'with an anonymous pair');
  });

  it('a pair minted on another tenant is refused (403 AUTH_CROSS_SITE), signed in or anonymous', async () => {
    const mallory = await signInAs(app, await createCustomer(app, 'evil'), ['*']);
    const page = await app.http('evil.localhost').get(TASK_FORM).set('Cookie', mallory.cookie);
    expect(page.status).toBe(200);
    const own = csrfCookieOf(page);
    await expectRefusedPost(
      own ? `${admin}; ${own}` : admin,
      csrfFields(page.text)[0]!,
      'with the other tenant’s pair',
    );

    // The sign-in form: a pair from evil's sign-in page does not sign anybody in on acme.
    const evilLogin = await app.http('evil.localhost').get('/admin/login');
    const res = await http()
      .post('/api/v1/auth/login')
      .set('Cookie', csrfCookieOf(evilLogin))
      .type('form')
      .send({ csrf: csrfFields(evilLogin.text)[0], email: 'a@example.com', password: 'whatever it is' });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('AUTH_CROSS_SITE');
  });

  it('an equal cookie and field the attacker chose are refused (403 AUTH_CROSS_SITE), signed in or anonymous', async () => {
    const chosen = 'A'.repeat(43);
    await expectRefusedPost(`${admin}; app_csrf=${chosen}`, chosen, 'with a chosen pair');
    const res = await http()
      .post('/api/v1/auth/login')
      .set('Cookie', `app_csrf=${chosen}`)
      .type('form')
      .send({ csrf: chosen, email: 'a@example.com', password: 'whatever it is' });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('AUTH_CROSS_SITE');
  });

  it('the sign-in page of a browser that still holds a session cookie binds its form to that cookie', async () => {
    const person = await signInAs(app, acme, ['*'], { email: 'still-signed-in@example.com' });
    const page = await http().get('/admin/login').set('Cookie', person.cookie);
    expect(csrfCookieOf(page)).toBe('');
    const res = await http()
      .post('/api/v1/auth/login')
      .set('Cookie', person.cookie)
      .type('form')
      .send({ csrf: csrfFields(page.text)[0], email: 'nobody@example.com', password: 'not a password' });
    // Past the token: the credentials are what is refused (the sign-in page again, 401).
    expect(res.status).toBe(401);
  });
});
