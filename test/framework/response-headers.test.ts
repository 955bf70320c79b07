import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { THROTTLE, type AttemptKind } from '../../modules/auth/throttle.ts';

/**
 * Rules on headers: every 429 carries Retry-After; every answer of a route that is not public
 * carries Cache-Control: no-store; every answer carries X-Content-Type-Options: nosniff.
 */

let cookie: string;
const HOST = 'acme.localhost';

const t = useTestApp({ customers: ['acme'] });
beforeAll(async () => {
  cookie = (await signInAs(t.app, t.acme, ['*'])).cookie;
});

/** Fills the client address's window for the kind, as that many earlier requests would have. */
async function fillWindow(kind: AttemptKind, source: string): Promise<void> {
  await t.app.services.transactions.run(t.acme, async (ctx) => {
    for (let i = 0; i < THROTTLE[kind].max; i++)
      await sql`insert into auth_attempts (kind, source) values (${kind}, ${source})`.execute(ctx.db);
  });
}

describe('every 429 carries Retry-After', () => {
  it('POST /api/v1/auth/password/forgot', async () => {
    await fillWindow('forgot', '203.0.113.10');
    const res = await t.app
      .http(HOST)
      .post('/api/v1/auth/password/forgot')
      .set('X-Forwarded-For', '203.0.113.10')
      .send({ email: 'a@example.com' });
    expect(res.status).toBe(429);
    expect(res.body.code).toBe('RATE_LIMITED');
    expect(res.headers['retry-after']).toBe(String(THROTTLE.forgot.windowMinutes * 60));
  });

  it('POST /api/v1/auth/password/reset', async () => {
    await fillWindow('reset', '203.0.113.11');
    const res = await t.app
      .http(HOST)
      .post('/api/v1/auth/password/reset')
      .set('X-Forwarded-For', '203.0.113.11')
      .send({ token: 'whatever', password: 'a long enough password' });
    expect(res.status).toBe(429);
    expect(res.body.code).toBe('RATE_LIMITED');
    expect(res.headers['retry-after']).toBe(String(THROTTLE.reset.windowMinutes * 60));
  });

  it('POST /api/v1/auth/login', async () => {
    await fillWindow('login', '203.0.113.12');
    const res = await t.app
      .http(HOST)
      .post('/api/v1/auth/login')
      .set('X-Forwarded-For', '203.0.113.12')
      .send({ email: 'a@example.com', password: 'x' });
    expect(res.status).toBe(429);
    expect(res.body.code).toBe('ErrTooManyAttempts');
    expect(res.headers['retry-after']).toBe(String(THROTTLE.login.windowMinutes * 60));
  });
});

describe('every answer of a route that is not public carries Cache-Control: no-store', () => {
  it.each([
    ['GET /api/v1/auth/me', '/api/v1/auth/me'],
    ['a generated list', '/api/v1/testkit/widgets'],
    ['a generated read (404)', '/api/v1/testkit/widgets/00000000-0000-4000-8000-000000000000'],
  ])('%s, signed in', async (_name, path) => {
    const res = await t.app.http(HOST).get(path).set('Cookie', cookie);
    expect(res.headers['content-type']).toMatch(/json/);
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('a refusal of such a route (401 AUTH_REQUIRED)', async () => {
    const res = await t.app.http(HOST).get('/api/v1/auth/me');
    expect(res.status).toBe(401);
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('a validation failure of such a route (422)', async () => {
    const res = await t.app.http(HOST).post('/api/v1/testkit/widgets').set('Cookie', cookie).send({ name: 1 });
    expect(res.status).toBe(422);
    expect(res.headers['cache-control']).toBe('no-store');
  });
});

describe('every answer carries X-Content-Type-Options: nosniff', () => {
  it.each([
    ['a JSON answer', HOST, '/api/v1/auth/me', 200],
    ['a problem', HOST, '/api/v1/testkit/widgets?limit=0', 422],
    ['an unknown route', HOST, '/api/v1/no/such/route', 404],
    ['an unknown host (NO_SITE)', 'nowhere.localhost', '/api/v1/auth/me', 404],
    ['a probe', HOST, '/health', 200],
    ['the OpenAPI document', HOST, '/api/v1/openapi.json', 200],
    ['a static file of the API docs', HOST, '/api/v1/docs/static/index.css', 200],
  ])('%s', async (_name, host, path, status) => {
    const res = await t.app.http(host).get(path).set('Cookie', cookie);
    expect(res.status).toBe(status);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });
});

/**
 * Issue 27, point 5: every HTML answer refuses framing. The walk starts from the known HTML
 * routes — the registry's routes that document a text/html answer, the sign-in page, the API
 * viewer's pages, the error pages — and follows every local link the admin pages show, as a
 * customer's administrator and as the operator's, so a page added later is walked too.
 */
describe("every HTML answer carries X-Frame-Options: DENY and CSP frame-ancestors 'none'", () => {
  const refusesFraming = (res: { headers: Record<string, string | string[] | undefined> }, where: string) => {
    expect(res.headers['x-frame-options'], where).toBe('DENY');
    expect(String(res.headers['content-security-policy']), where).toMatch(/(^|;)\s*frame-ancestors 'none'(;|$)/);
  };
  const isHtml = (res: { headers: Record<string, unknown> }) =>
    String(res.headers['content-type'] ?? '').startsWith('text/html');

  /** Visits each path and every local link of each HTML answer; returns the HTML answers' paths. */
  async function walk(host: string, who: string, start: string[]): Promise<string[]> {
    const seen = new Set<string>();
    const html: string[] = [];
    const queue = [...start];
    while (queue.length > 0 && seen.size < 400) {
      const path = queue.shift()!;
      if (seen.has(path)) continue;
      seen.add(path);
      const res = await t.app.http(host).get(path).set('Cookie', who);
      if (!isHtml(res)) continue;
      html.push(path);
      refusesFraming(res, `GET ${host}${path} (${res.status})`);
      for (const [, href] of res.text.matchAll(/\shref="(\/[^"#]*)"/g)) {
        const local = href!.replaceAll('&amp;', '&');
        // Same-origin pages only; the sign-out link is a form, never a GET.
        if (!local.startsWith('//') && !seen.has(local)) queue.push(local);
      }
    }
    return html;
  }

  it('the routes that document text/html, the admin pages reachable by links (customer and operator), the API viewer', async () => {
    // Rows to link to: a task and a content page, so detail, edit, command and delete pages exist.
    const task = await t.app
      .http(HOST)
      .post('/api/v1/task/tasks')
      .set('Cookie', cookie)
      .send({ title: 'Framed?', priority: 'low', deadline: '2031-01-01T00:00:00Z' });
    expect(task.status).toBe(201);
    const documented = t.app.services.routes
      .filter(
        ({ route }) =>
          route.method === 'GET' &&
          Object.values(route.schema.response ?? {}).some((r) => JSON.stringify(r).includes('"text/html"')),
      )
      .map(({ route }) => route.url);
    expect(documented).toContain('/auth/reset');
    const start = [
      ...documented,
      '/auth/reset?token=abc',
      '/admin',
      '/admin/login',
      '/admin/login?next=%2Fadmin',
      '/admin/no/such/page',
      '/api/v1/docs',
      '/api/v1/docs/static/index.html',
      '/api/v1/docs/static/oauth2-redirect.html',
    ];
    const customer = await walk(HOST, cookie, start);
    const operator = await walk('operator.localhost', (await signInAs(t.app, t.app.operator, ['*'])).cookie, [
      '/admin',
      '/admin/no/such/page',
    ]);
    for (const path of [
      '/auth/reset',
      '/admin',
      '/admin/login',
      '/admin/no/such/page',
      '/api/v1/docs',
      '/api/v1/docs/static/oauth2-redirect.html',
      '/admin/task/tasks',
      `/admin/task/tasks/${task.body.id}`,
      `/admin/task/tasks/${task.body.id}/edit`,
      `/admin/task/tasks/${task.body.id}/resolve`,
      `/admin/task/tasks/${task.body.id}/delete`,
    ]) {
      expect(customer, path).toContain(path);
    }
    expect(operator).toContain('/admin/tenant/tenants');
    expect(customer.length + operator.length).toBeGreaterThan(40);
  });

  it('the HTML answers outside a GET: a refused admin page (403), a refused form post, the login route’s refused form post', async () => {
    const member = (await signInAs(t.app, t.acme, [])).cookie;
    const refused = await t.app.http(HOST).get('/admin/task/tasks').set('Cookie', member);
    expect([refused.status, isHtml(refused)]).toEqual([403, true]);
    refusesFraming(refused, 'a 403 page');
    const noToken = await t.app
      .http(HOST)
      .post('/admin/task/tasks/new')
      .set('Cookie', cookie)
      .type('form')
      .send({ title: 'x' });
    expect([noToken.status, isHtml(noToken)]).toEqual([403, true]);
    refusesFraming(noToken, 'a form post without its token');
    const page = await t.app.http(HOST).get('/admin/login');
    const secret = String((page.headers['set-cookie'] as unknown as string[])[0]).split(';', 1)[0]!;
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)![1]!;
    const login = await t.app
      .http(HOST)
      .post('/api/v1/auth/login')
      .set('Cookie', secret)
      .type('form')
      .send({ csrf, email: 'nobody@example.com', password: 'not the password' });
    expect([login.status, isHtml(login)]).toEqual([401, true]);
    refusesFraming(login, 'the login route’s sign-in page');
  });

  it('the policy a page set itself keeps its directives; a download stays as SPEC Files rule 5 says', async () => {
    const reset = await t.app.http(HOST).get('/auth/reset?token=abc');
    expect(reset.headers['content-security-policy']).toContain("default-src 'none'");
    const docs = await t.app.http(HOST).get('/api/v1/docs');
    expect(docs.headers['content-security-policy']).toBe("frame-ancestors 'none'");
    // An uploaded file declared text/html is a download (an attachment), not a page.
    const boundary = 'frame-test-boundary';
    const body = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="page.html"\r\nContent-Type: text/html\r\n\r\n<p>hi</p>\r\n--${boundary}--\r\n`;
    const uploaded = await t.app
      .http(HOST)
      .post('/api/v1/file/files?visibility=public')
      .set('Cookie', cookie)
      .set('Content-Type', `multipart/form-data; boundary=${boundary}`)
      .send(body);
    expect(uploaded.status).toBe(201);
    const download = await t.app.http(HOST).get(`/api/v1/file/public/${uploaded.body.id}`);
    expect(download.headers['content-type']).toMatch(/^text\/html/);
    expect(download.headers['content-disposition']).toMatch(/^attachment/);
    expect(download.headers['content-security-policy']).toBe("default-src 'none'; sandbox");
  });
});
