import { describe, expect, it } from 'vitest';
import { signInAs, type TestApp } from '../../helpers/app.ts';
import { useTestApp } from '../../helpers/use-test-app.ts';
import { hashSecret } from '../../../framework/access/session-cookie.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { clearAttempts, deliverOutbox } from './fixtures.ts';

const t = useTestApp({ role: 'all', customers: ['acme', 'globex'] });

const acmeHttp = () => t.app.http('acme.localhost');

/** Makes a token over the API as the signed-in caller; answers the raw token and its id. */
async function makeToken(
  cookie: string,
  body: Record<string, unknown>,
  host = 'acme.localhost',
): Promise<{ id: string; token: string; body: Record<string, unknown> }> {
  const res = await t.app.http(host).post('/api/v1/auth/tokens').set('Cookie', cookie).send(body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { id: res.body.id, token: res.body.token, body: res.body };
}

const bearer = (token: string) => `Bearer ${token}`;
const aTask = (title: string) => ({
  title,
  priority: 'high',
  deadline: new Date(Date.now() + 86_400_000).toISOString(),
});

async function roleOf(app: TestApp, tenant: TenantRef, userId: string): Promise<string> {
  return app.services.transactions.run(
    tenant,
    async (ctx) =>
      (await ctx.db.selectFrom('users').select('roles').where('id', '=', userId).executeTakeFirstOrThrow()).roles[0]!,
  );
}

describe('personal access tokens: making them', () => {
  it('shows the raw token once and stores only its SHA-256, with a 90-day default expiry', async () => {
    const user = await signInAs(t.app, t.acme, ['task:read']);
    const made = await makeToken(user.cookie, { name: 'ci', permissions: ['task:read'] });
    expect(made.token).toMatch(/^tnt_pat_[A-Za-z0-9_-]{43}$/);
    expect(made.body).toMatchObject({ name: 'ci', permissions: ['task:read'], userId: user.userId, lastUsedAt: null });
    const days = (Date.parse(made.body.expiresAt as string) - Date.parse(made.body.createdAt as string)) / 86_400_000;
    expect(days).toBe(90);
    const { rows } = await t.app.services.db.pool.query('select token_hash from access_tokens where id = $1', [
      made.id,
    ]);
    expect(Buffer.compare(rows[0].token_hash, hashSecret(made.token))).toBe(0);
    const dump = JSON.stringify((await t.app.services.db.pool.query('select * from access_tokens')).rows);
    expect(dump).not.toContain(made.token);
    // The list never carries the secret.
    const list = await acmeHttp().get('/api/v1/auth/tokens').set('Cookie', user.cookie);
    expect(list.status).toBe(200);
    expect(list.body.items.map((i: { id: string }) => i.id)).toEqual([made.id]);
    expect(JSON.stringify(list.body)).not.toContain(made.token);
  });

  it('is a secret shown once in a batch too: an Idempotency-Key keeps no raw token, and its replay answers null', async () => {
    const user = await signInAs(t.app, t.acme, ['task:read']);
    const send = () =>
      acmeHttp()
        .post('/api/v1/batch')
        .set('Cookie', user.cookie)
        .set('Idempotency-Key', 'batch-makes-a-token')
        .send({ requests: [{ method: 'POST', path: '/api/v1/auth/tokens', body: { name: 'ci', permissions: [] } }] });
    const first = await send();
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const raw = first.body.results[0].body.token as string;
    expect(raw).toMatch(/^tnt_pat_/);
    const kept = JSON.stringify((await t.app.services.db.pool.query('select * from idempotency_keys')).rows);
    expect(kept).not.toContain(raw);
    const again = await send();
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.headers['idempotent-secrets-withheld']).toBe('/results/0/body/token');
    expect(again.body.results[0].body).toMatchObject({ id: first.body.results[0].body.id, token: null });
    expect(JSON.stringify(again.body)).not.toContain(raw);
  });

  it('refuses an expiry past a year with TOKEN_EXPIRY_TOO_LONG and a permission the caller lacks with TOKEN_PERMISSION_NOT_HELD', async () => {
    const user = await signInAs(t.app, t.acme, ['task:read']);
    const long = await acmeHttp()
      .post('/api/v1/auth/tokens')
      .set('Cookie', user.cookie)
      .send({ name: 'x', expiresInDays: 366, permissions: [] });
    expect(long.status).toBe(422);
    expect(long.body.code).toBe('TOKEN_EXPIRY_TOO_LONG');
    expect(
      (
        await acmeHttp()
          .post('/api/v1/auth/tokens')
          .set('Cookie', user.cookie)
          .send({ name: 'x', expiresInDays: 365, permissions: [] })
      ).status,
    ).toBe(201);
    const beyond = await acmeHttp()
      .post('/api/v1/auth/tokens')
      .set('Cookie', user.cookie)
      .send({ name: 'x', permissions: ['task:read', 'task:update'] });
    expect(beyond.status).toBe(403);
    expect(beyond.body.code).toBe('TOKEN_PERMISSION_NOT_HELD');
    expect(beyond.body.errors).toEqual([{ pointer: '/body/permissions/1', message: 'you do not hold task:update' }]);
    const wildcard = await acmeHttp()
      .post('/api/v1/auth/tokens')
      .set('Cookie', user.cookie)
      .send({ name: 'x', permissions: ['*'] });
    expect(wildcard.body.code).toBe('TOKEN_PERMISSION_NOT_HELD');
    const unknown = await acmeHttp()
      .post('/api/v1/auth/tokens')
      .set('Cookie', user.cookie)
      .send({ name: 'x', permissions: ['no:such'] });
    expect(unknown.status).toBe(422);
    expect(unknown.body.code).toBe('PERMISSION_UNKNOWN');
  });

  it('takes the session cookie only: a token cannot make, list or end tokens', async () => {
    const user = await signInAs(t.app, t.acme, ['task:read']);
    const { id, token } = await makeToken(user.cookie, { name: 'ci', permissions: ['task:read'] });
    const create = await acmeHttp()
      .post('/api/v1/auth/tokens')
      .set('Authorization', bearer(token))
      .send({ name: 'child', permissions: [] });
    expect(create.status).toBe(401);
    expect(create.body.code).toBe('AUTH_REQUIRED');
    expect((await acmeHttp().get('/api/v1/auth/tokens').set('Authorization', bearer(token))).status).toBe(401);
    expect((await acmeHttp().delete(`/api/v1/auth/tokens/${id}`).set('Authorization', bearer(token))).status).toBe(401);
  });
});

describe('personal access tokens: Authorization: Bearer', () => {
  it('lists tasks on its tenant, answers 401 on another host and 403 beyond its permissions', async () => {
    const user = await signInAs(t.app, t.acme, ['task:read', 'task:update']);
    const { token } = await makeToken(user.cookie, { name: 'reader', permissions: ['task:read'] });
    const list = await acmeHttp().get('/api/v1/task/tasks').set('Authorization', bearer(token));
    expect(list.status).toBe(200);
    expect(list.body).toHaveProperty('items');
    const elsewhere = await t.app
      .http('globex.localhost')
      .get('/api/v1/task/tasks')
      .set('Authorization', bearer(token));
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.body.code).toBe('TOKEN_INVALID');
    // The user may create tasks, the token may not.
    const create = await acmeHttp()
      .post('/api/v1/task/tasks')
      .set('Authorization', bearer(token))
      .send(aTask('by token'));
    expect(create.status).toBe(403);
    expect(create.body.code).toBe('AUTH_FORBIDDEN');
  });

  it("intersects the token's permissions with the user's current ones: a role change applies at once", async () => {
    const user = await signInAs(t.app, t.acme, ['task:read']);
    const { token } = await makeToken(user.cookie, { name: 'reader', permissions: ['task:read'] });
    expect((await acmeHttp().get('/api/v1/task/tasks').set('Authorization', bearer(token))).status).toBe(200);
    const role = await roleOf(t.app, t.acme, user.userId);
    await t.app.services.transactions.run(t.acme, (ctx) =>
      ctx.db.updateTable('roles').set({ permissions: [] }).where('name', '=', role).execute(),
    );
    const refused = await acmeHttp().get('/api/v1/task/tasks').set('Authorization', bearer(token));
    expect(refused.status).toBe(403);
    // The wildcard on the user's side grants the token's list, no more.
    await t.app.services.transactions.run(t.acme, (ctx) =>
      ctx.db
        .updateTable('roles')
        .set({ permissions: ['*'] })
        .where('name', '=', role)
        .execute(),
    );
    expect((await acmeHttp().get('/api/v1/task/tasks').set('Authorization', bearer(token))).status).toBe(200);
    expect(
      (await acmeHttp().post('/api/v1/task/tasks').set('Authorization', bearer(token)).send(aTask('x'))).status,
    ).toBe(403);
    const me = await acmeHttp().get('/api/v1/auth/me').set('Authorization', bearer(token));
    expect(me.body.permissions).toEqual(['task:read']);
  });

  it('records when it was last used', async () => {
    const user = await signInAs(t.app, t.acme, ['task:read']);
    const { id, token } = await makeToken(user.cookie, { name: 'reader', permissions: ['task:read'] });
    expect((await acmeHttp().get('/api/v1/auth/me').set('Authorization', bearer(token))).status).toBe(200);
    const list = await acmeHttp().get('/api/v1/auth/tokens').set('Cookie', user.cookie);
    const used = list.body.items.find((i: { id: string }) => i.id === id);
    expect(used.lastUsedAt).not.toBeNull();
  });

  it('refuses an expired token, a revoked one and an unknown one with 401 TOKEN_INVALID', async () => {
    await clearAttempts(t.app);
    const user = await signInAs(t.app, t.acme, ['task:read']);
    const expired = await makeToken(user.cookie, { name: 'old', permissions: ['task:read'] });
    await t.app.services.db.pool.query(
      `update access_tokens set expires_at = now() - interval '1 second' where id = $1`,
      [expired.id],
    );
    const revoked = await makeToken(user.cookie, { name: 'gone', permissions: ['task:read'] });
    expect((await acmeHttp().delete(`/api/v1/auth/tokens/${revoked.id}`).set('Cookie', user.cookie)).status).toBe(204);
    for (const token of [expired.token, revoked.token, 'tnt_pat_nothing', '']) {
      const res = await acmeHttp().get('/api/v1/task/tasks').set('Authorization', bearer(token));
      expect(res.status, token).toBe(401);
      expect(res.body.code).toBe('TOKEN_INVALID');
    }
    await clearAttempts(t.app);
  });

  it('is not subject to the cross-site rule, which still guards the cookie', async () => {
    const user = await signInAs(t.app, t.acme, ['task:read', 'task:update']);
    const { token } = await makeToken(user.cookie, { name: 'writer', permissions: ['task:update'] });
    const byToken = await acmeHttp()
      .post('/api/v1/task/tasks')
      .set('Authorization', bearer(token))
      .set('Sec-Fetch-Site', 'cross-site')
      .send(aTask('by token'));
    expect(byToken.status).toBe(201);
    const byCookie = await acmeHttp()
      .post('/api/v1/task/tasks')
      .set('Cookie', user.cookie)
      .set('Sec-Fetch-Site', 'cross-site')
      .send(aTask('by cookie'));
    expect(byCookie.status).toBe(403);
    expect(byCookie.body.code).toBe('AUTH_CROSS_SITE');
    // A request with a token is the token's: the cookie beside it grants nothing more.
    const both = await acmeHttp()
      .post('/api/v1/task/tasks')
      .set('Authorization', bearer('tnt_pat_wrong'))
      .set('Cookie', user.cookie)
      .send(aTask('x'));
    expect(both.status).toBe(401);
    await clearAttempts(t.app);
  });

  it('is never accepted by the admin shell: a bearer header there is no session', async () => {
    const user = await signInAs(t.app, t.acme, ['*']);
    const { token } = await makeToken(user.cookie, { name: 'all', permissions: ['*'] });
    const res = await acmeHttp().get('/admin').set('Authorization', bearer(token));
    expect(res.status).toBe(303);
    expect(String(res.headers.location)).toMatch(/^\/admin\/login/);
    const page = await acmeHttp().get('/admin/auth/tokens').set('Authorization', bearer(token));
    expect(page.status).toBe(303);
  });

  it('counts failed bearer attempts towards the sign-in limit of the address: 10 in 15 minutes, then 429 with Retry-After', async () => {
    await clearAttempts(t.app);
    const user = await signInAs(t.app, t.acme, ['task:read']);
    const { token } = await makeToken(user.cookie, { name: 'reader', permissions: ['task:read'] });
    const from = (value: string) =>
      acmeHttp().get('/api/v1/task/tasks').set('X-Forwarded-For', '192.0.2.77').set('Authorization', bearer(value));
    for (let i = 0; i < 10; i++) expect((await from(`tnt_pat_guess${i}`)).status).toBe(401);
    const refused = await from(token);
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('ErrTooManyAttempts');
    expect(Number(refused.headers['retry-after'])).toBe(15 * 60);
    // Another address is not held back, and a password sign-in from the held address is refused too.
    expect(
      (
        await acmeHttp()
          .get('/api/v1/task/tasks')
          .set('X-Forwarded-For', '192.0.2.78')
          .set('Authorization', bearer(token))
      ).status,
    ).toBe(200);
    const login = await acmeHttp()
      .post('/api/v1/auth/login')
      .set('X-Forwarded-For', '192.0.2.77')
      .send({ email: user.email, password: 'whatever' });
    expect(login.status).toBe(429);
    await clearAttempts(t.app);
  });
});

describe('personal access tokens: ending them', () => {
  it("lets the user revoke their own, not another's (404), and an administrator with token:manage revoke any", async () => {
    const owner = await signInAs(t.app, t.acme, ['task:read']);
    const other = await signInAs(t.app, t.acme, ['task:read']);
    const admin = await signInAs(t.app, t.acme, ['token:manage']);
    const first = await makeToken(owner.cookie, { name: 'one', permissions: [] });
    const second = await makeToken(owner.cookie, { name: 'two', permissions: [] });
    const notYours = await acmeHttp().delete(`/api/v1/auth/tokens/${first.id}`).set('Cookie', other.cookie);
    expect(notYours.status).toBe(404);
    expect(
      (await acmeHttp().get('/api/v1/auth/tokens').query({ userId: owner.userId }).set('Cookie', other.cookie)).status,
    ).toBe(403);
    const seen = await acmeHttp()
      .get('/api/v1/auth/tokens')
      .query({ userId: owner.userId })
      .set('Cookie', admin.cookie);
    expect(seen.body.items.map((i: { name: string }) => i.name)).toEqual(['two', 'one']);
    // Paged like every list: newest first, one at a time by the cursor.
    const firstPage = await acmeHttp().get('/api/v1/auth/tokens').query({ limit: 1 }).set('Cookie', owner.cookie);
    expect(firstPage.body).toMatchObject({
      items: [{ name: 'two' }],
      total: 2,
      totalExact: true,
      limit: 1,
      next: expect.any(String),
    });
    const nextPage = await acmeHttp()
      .get('/api/v1/auth/tokens')
      .query({ limit: 1, after: firstPage.body.next })
      .set('Cookie', owner.cookie);
    expect(nextPage.body).toMatchObject({ items: [{ name: 'one' }], next: null });
    expect((await acmeHttp().delete(`/api/v1/auth/tokens/${first.id}`).set('Cookie', admin.cookie)).status).toBe(204);
    expect((await acmeHttp().delete(`/api/v1/auth/tokens/${second.id}`).set('Cookie', owner.cookie)).status).toBe(204);
    expect((await acmeHttp().get('/api/v1/auth/me').set('Authorization', bearer(first.token))).status).toBe(401);
    const events = await t.app.services.db.pool.query(
      `select count(*)::int as n from outbox where name = 'auth.token_revoked' and payload->>'userId' = $1`,
      [owner.userId],
    );
    expect(events.rows[0].n).toBe(2);
  });

  it("ends a user's tokens when the user is deactivated", async () => {
    const manager = await signInAs(t.app, t.acme, ['user:manage', 'user:read']);
    const person = await signInAs(t.app, t.acme, ['task:read']);
    const { token } = await makeToken(person.cookie, { name: 'reader', permissions: ['task:read'] });
    const deactivated = await acmeHttp()
      .post(`/api/v1/user/users/${person.userId}/deactivate`)
      .set('Cookie', manager.cookie);
    expect(deactivated.status).toBe(200);
    // Refused from the status change on, before the subscription has run…
    expect((await acmeHttp().get('/api/v1/task/tasks').set('Authorization', bearer(token))).status).toBe(401);
    await deliverOutbox(t.app);
    // …and deleted by it, so reactivating the person does not bring the token back.
    const { rows } = await t.app.services.db.pool.query(
      'select count(*)::int as n from access_tokens where user_id = $1',
      [person.userId],
    );
    expect(rows[0].n).toBe(0);
    await clearAttempts(t.app);
  });
});
