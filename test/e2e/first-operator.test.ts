import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import supertest from 'supertest';
import { createTestDatabase } from '../helpers/database.ts';
import { SmtpSink, linkIn } from '../modules/user/smtp-sink.ts';
import { eventually } from '../modules/user/support.ts';
import { adminInvite, printedLink, startService, stopService } from './processes.ts';
import { freePort } from '../helpers/ports.ts';

/**
 * The acceptance path of a newcomer, against the real service process: start, invite the first
 * operator administrator with the documented command, set the password through the link, log in,
 * create a customer with a host, invite its administrator, who signs in on the customer host and
 * is refused every operator route.
 */
const sink = new SmtpSink();
let service: { child: ChildProcess; url: string; log: () => string } | undefined;
let settings: Record<string, string>;

beforeAll(async () => {
  const smtpPort = await sink.start();
  const port = await freePort();
  settings = {
    TENANTRY_DATABASE_URL: await createTestDatabase(),
    TENANTRY_SERVER_PORT: String(port),
    TENANTRY_SERVER_PUBLIC_HOST: 'operator.localhost',
    TENANTRY_SERVER_LOG_LEVEL: 'info',
    TENANTRY_MAIL_HOST: '127.0.0.1',
    TENANTRY_MAIL_PORT: String(smtpPort),
  };
  service = await startService(settings);
}, 120_000);
afterAll(async () => {
  if (service) await stopService(service.child);
  await sink.stop();
});

/** A request to the service as a client reaching it under the given host name would send it. */
const to = (host: string) => {
  const agent = supertest(service!.url);
  const hostHeader = `${host}:${new URL(service!.url).port}`;
  return {
    get: (path: string) => agent.get(path).set('Host', hostHeader),
    post: (path: string) => agent.post(path).set('Host', hostHeader),
  };
};

const sessionCookieOf = (res: supertest.Response): string => {
  const header = ([] as string[]).concat(res.headers['set-cookie'] ?? []).find((c) => c.startsWith('app_session='));
  if (!header) throw new Error(`no session cookie in ${JSON.stringify(res.headers)}`);
  return header.split(';', 1)[0]!;
};

describe('first operator to first customer administrator', () => {
  it('runs the whole path a newcomer follows', async () => {
    // 1. The documented command prints the operator administrator's set-password link.
    const invited = await adminInvite(['you@example.com'], settings);
    expect(invited.code, invited.stderr).toBe(0);
    const operatorLink = printedLink(invited.stdout);
    expect(operatorLink.hostname).toBe('operator.localhost');
    expect(operatorLink.port).toBe(settings.TENANTRY_SERVER_PORT);

    // 2. The link opens the set-password page; the password is set with the token from it.
    const page = await to('operator.localhost').get(`${operatorLink.pathname}${operatorLink.search}`);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    const token = operatorLink.searchParams.get('token')!;
    const set = await to('operator.localhost')
      .post('/api/v1/auth/password/reset')
      .send({ token, password: 'operator secret 1' });
    expect(set.status).toBe(204);

    // 3. Log in as a non-browser client would (curl): keep the Set-Cookie value, send it back.
    const login = await to('operator.localhost')
      .post('/api/v1/auth/login')
      .send({ email: 'you@example.com', password: 'operator secret 1' });
    expect(login.status).toBe(200);
    expect(login.body).toMatchObject({ email: 'you@example.com', roles: ['admin'] });
    const operatorCookie = sessionCookieOf(login);

    // 4. Create a customer tenant with a host.
    const created = await to('operator.localhost')
      .post('/api/v1/tenant/tenants')
      .set('Cookie', operatorCookie)
      .send({ slug: 'acme', name: 'Acme', host: 'acme.localhost' });
    expect(created.status).toBe(201);
    expect(created.body.hosts).toEqual([{ host: 'acme.localhost', primary: true }]);

    // 5. Invite its administrator; the service's worker mails the link on the customer's host.
    const boss = await to('operator.localhost')
      .post(`/api/v1/tenant/tenants/${created.body.id}/invite`)
      .set('Cookie', operatorCookie)
      .send({ email: 'boss@acme.test', displayName: 'Boss' });
    expect(boss.status).toBe(201);
    expect(boss.body).toMatchObject({ status: 'invited', roles: ['admin'] });
    const [mail] = await eventually(
      async () => sink.to('boss@acme.test').length > 0 && sink.to('boss@acme.test'),
      20_000,
      'the invitation mail',
    );
    const customerLink = linkIn(mail!);
    expect(customerLink.hostname).toBe('acme.localhost');

    // 6. The customer administrator sets a password through that link and signs in on the customer host.
    const customerToken = customerLink.searchParams.get('token')!;
    const customerSet = await eventually(
      async () => {
        // The mail leaves inside the worker's transaction; the token counts once that commits.
        const res = await to('acme.localhost')
          .post('/api/v1/auth/password/reset')
          .send({ token: customerToken, password: 'customer secret 1' });
        return res.status === 204 ? res : undefined;
      },
      5000,
      'the customer token to be redeemable',
    );
    expect(customerSet.status).toBe(204);
    const customerLogin = await to('acme.localhost')
      .post('/api/v1/auth/login')
      .send({ email: 'boss@acme.test', password: 'customer secret 1' });
    expect(customerLogin.status).toBe(200);
    expect(customerLogin.body).toMatchObject({ email: 'boss@acme.test', roles: ['admin'], permissions: ['*'] });
    const customerCookie = sessionCookieOf(customerLogin);
    expect((await to('acme.localhost').get('/api/v1/user/users').set('Cookie', customerCookie)).status).toBe(200);

    // 7. No operator route is open to them: 403 AUTH_NOT_OPERATOR, although their role holds the wildcard.
    const id = created.body.id as string;
    for (const [method, path, body] of [
      ['get', '/api/v1/tenant/tenants', undefined],
      ['post', '/api/v1/tenant/tenants', { slug: 'evil', name: 'Evil', host: 'evil.localhost' }],
      ['get', `/api/v1/tenant/tenants/${id}`, undefined],
      ['post', `/api/v1/tenant/tenants/${id}/hosts`, { host: 'evil.localhost' }],
      ['post', `/api/v1/tenant/tenants/${id}/invite`, { email: 'evil@acme.test' }],
      ['post', `/api/v1/tenant/tenants/${id}/suspend`, undefined],
    ] as const) {
      const res = await to('acme.localhost')[method](path).set('Cookie', customerCookie).send(body);
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.code).toBe('AUTH_NOT_OPERATOR');
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    }
    // Their session is no session on the operator host either.
    expect((await to('operator.localhost').get('/api/v1/tenant/tenants').set('Cookie', customerCookie)).status).toBe(
      401,
    );
    // And the operator still sees one customer, active.
    const list = await to('operator.localhost').get('/api/v1/tenant/tenants').set('Cookie', operatorCookie);
    expect(list.body.items.map((t: { slug: string; status: string }) => `${t.slug}:${t.status}`)).toEqual([
      'operator:active',
      'acme:active',
    ]);
  }, 120_000);
});
