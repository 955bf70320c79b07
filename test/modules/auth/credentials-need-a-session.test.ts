import { beforeEach, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { useTestApp } from '../../helpers/use-test-app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import type { TxContext } from '../../../framework/context/tx.ts';
import { hashSecret } from '../../../framework/access/session-cookie.ts';
import { ProblemError } from '../../../framework/errors.ts';
import { usersService } from '../../../modules/user/users-service.ts';
import { hashPassword } from '../../../modules/user/passwords.ts';
import { createToken } from '../../../modules/auth/tokens.ts';
import { setRole } from '../../../modules/auth/roles.routes.ts';
import { mintSetPasswordToken } from '../../../modules/auth/set-password-tokens.ts';
import { addUser, clearAttempts, sessionCookieOf } from './fixtures.ts';

// Issue 41, point 6: a personal access token never changes credentials or roles; a password set
// without the one in force ends the person's tokens as it ends their sessions; a token at a
// customer never holds an operator permission.

const t = useTestApp({ customers: ['acme'] });
const acmeHttp = () => t.app.http('acme.localhost');
const bearer = (token: string) => `Bearer ${token}`;

beforeEach(async () => {
  await clearAttempts(t.app);
});

/** A person with a password, holding a role of exactly these permissions, signed in with a cookie. */
async function person(tenant: TenantRef, permissions: string[], host = 'acme.localhost') {
  const role = `r${Math.random().toString(36).slice(2, 12)}`;
  await t.app.services.transactions.run(tenant, (ctx) =>
    ctx.db.executeQuery(
      CompiledQuery.raw('insert into roles (name, permissions) values ($1, $2)', [role, permissions]),
    ),
  );
  const user = await addUser(t.app, tenant, { roles: [role], password: 'the password in force' });
  const login = await t.app.http(host).post('/api/v1/auth/login').send({ email: user.email, password: user.password });
  expect(login.status, JSON.stringify(login.body)).toBe(200);
  return { ...user, role, cookie: sessionCookieOf(login)! };
}

async function tokenOf(cookie: string, permissions: string[], host = 'acme.localhost'): Promise<string> {
  const res = await t.app
    .http(host)
    .post('/api/v1/auth/tokens')
    .set('Cookie', cookie)
    .send({ name: 'ci', permissions });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.token as string;
}

const rolesOf = (userId: string) =>
  t.app.services.transactions.run(
    t.acme,
    async (ctx) =>
      (await ctx.db.selectFrom('users').select(['roles', 'email']).where('id', '=', userId).executeTakeFirstOrThrow())
        .roles,
  );

describe('a personal access token never changes credentials', () => {
  it("the issue's scenario: a token scoped to user:manage cannot set its own user's password, sign in with it, or mint a token", async () => {
    const mallory = await person(t.acme, ['user:manage', 'user:read']);
    const token = await tokenOf(mallory.cookie, ['user:manage']);

    const set = await acmeHttp()
      .post(`/api/v1/user/users/${mallory.id}/set-password`)
      .set('Authorization', bearer(token))
      .send({ password: 'chosen by whoever holds the token' });
    expect(set.status).toBe(401);
    expect(set.body.code).toBe('AUTH_REQUIRED');
    const signIn = await acmeHttp()
      .post('/api/v1/auth/login')
      .send({ email: mallory.email, password: 'chosen by whoever holds the token' });
    expect(signIn.status).toBe(401);
    expect(signIn.body.code).toBe('ErrCredentials');

    const mint = await acmeHttp()
      .post('/api/v1/auth/tokens')
      .set('Authorization', bearer(token))
      .send({ name: 'wider', expiresInDays: 365, permissions: ['*'] });
    expect(mint.status).toBe(401);
    expect(mint.body.code).toBe('AUTH_REQUIRED');
    // The token still does what it names.
    expect((await acmeHttp().get('/api/v1/user/users').set('Authorization', bearer(token))).status).toBe(403);
    expect(
      (
        await acmeHttp()
          .patch(`/api/v1/user/users/${mallory.id}`)
          .set('Authorization', bearer(token))
          .send({ displayName: 'Renamed by a token' })
      ).status,
    ).toBe(200);
  });

  it("nor a user's roles, an invitation's roles, a sign-in address or what a role grants", async () => {
    const mallory = await person(t.acme, ['user:manage', 'role:manage']);
    const token = await tokenOf(mallory.cookie, ['user:manage', 'role:manage']);
    const admin = await person(t.acme, ['*']);

    const roles = await acmeHttp()
      .post(`/api/v1/user/users/${mallory.id}/roles`)
      .set('Authorization', bearer(token))
      .send({ roles: ['admin'] });
    expect(roles.status).toBe(401);
    expect(roles.body.code).toBe('AUTH_REQUIRED');
    expect(await rolesOf(mallory.id)).toEqual([mallory.role]);

    // An invitation without roles is still a token's to send; one granting roles is not.
    const granting = await acmeHttp()
      .post('/api/v1/user/invitations')
      .set('Authorization', bearer(token))
      .send({ email: 'accomplice@elsewhere.test', roles: ['admin'] });
    expect(granting.status).toBe(401);
    expect(granting.body.code).toBe('AUTH_REQUIRED');
    expect(granting.body.detail).toMatch(/Granting roles needs a signed-in session/);
    const plain = await acmeHttp()
      .post('/api/v1/user/invitations')
      .set('Authorization', bearer(token))
      .send({ email: 'colleague@acme.test' });
    expect(plain.status).toBe(201);

    // The address is where a reset link goes.
    const address = await acmeHttp()
      .patch(`/api/v1/user/users/${admin.id}`)
      .set('Authorization', bearer(token))
      .send({ email: 'mallory@elsewhere.test' });
    expect(address.status).toBe(401);
    expect(address.body.code).toBe('AUTH_REQUIRED');
    const sameAddress = await acmeHttp()
      .patch(`/api/v1/user/users/${admin.id}`)
      .set('Authorization', bearer(token))
      .send({ email: admin.email.toUpperCase() });
    expect(sameAddress.status).toBe(200);

    for (const [method, path] of [
      ['put', `/api/v1/auth/roles/${mallory.role}`],
      ['delete', `/api/v1/auth/roles/${mallory.role}`],
    ] as const) {
      const res = await acmeHttp()
        [method](path)
        .set('Authorization', bearer(token))
        .send({ permissions: ['*'] });
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(res.body.code).toBe('AUTH_REQUIRED');
    }
    // The same changes with the cookie go through.
    expect(
      (
        await acmeHttp()
          .patch(`/api/v1/user/users/${mallory.id}`)
          .set('Cookie', mallory.cookie)
          .send({ email: 'mallory.new@acme.test' })
      ).status,
    ).toBe(200);
  });

  it("the operator's control plane is not a tenant's credentials: a token with tenant:manage invites a customer's first administrator", async () => {
    const operator = await person(t.app.operator, ['tenant:manage'], 'operator.localhost');
    const token = await tokenOf(operator.cookie, ['tenant:manage'], 'operator.localhost');
    const res = await t.app
      .http('operator.localhost')
      .post(`/api/v1/tenant/tenants/${t.acme.id}/invite`)
      .set('Authorization', bearer(token))
      .send({ email: `first-admin-${Date.now()}@acme.test` });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.roles).toEqual(['admin']);
  });

  it("but the operator tenant's own administrator is a credential of the caller's tenant: a token inviting one is 401 and creates nobody", async () => {
    const operator = await person(t.app.operator, ['tenant:manage'], 'operator.localhost');
    const token = await tokenOf(operator.cookie, ['tenant:manage'], 'operator.localhost');
    const email = `own-admin-${Date.now()}@operator.test`;
    const res = await t.app
      .http('operator.localhost')
      .post(`/api/v1/tenant/tenants/${t.app.operator.id}/invite`)
      .set('Authorization', bearer(token))
      .send({ email });
    expect(res.status, JSON.stringify(res.body)).toBe(401);
    expect(res.body.code).toBe('AUTH_REQUIRED');
    const invited = await t.app.services.transactions.run(t.app.operator, (ctx) =>
      usersService.findByEmail(ctx, email),
    );
    expect(invited).toBeUndefined();
    // With the session cookie, the same invitation is the operator's to send.
    const bySession = await t.app
      .http('operator.localhost')
      .post(`/api/v1/tenant/tenants/${t.app.operator.id}/invite`)
      .set('Cookie', operator.cookie)
      .send({ email });
    expect(bySession.status, JSON.stringify(bySession.body)).toBe(201);
  });

  it('the operations refuse a token caller themselves, whatever route reaches them', async () => {
    const mallory = await person(t.acme, ['*']);
    const token = await tokenOf(mallory.cookie, ['*']);
    const asToken = (fn: (ctx: TxContext) => Promise<unknown>) =>
      t.app.services.transactions.run(t.acme, fn, { tokenHash: hashSecret(token) });
    const hash = await hashPassword('chosen by whoever holds the token');
    const refusals = [
      asToken((ctx) => usersService.setPasswordHash(ctx, mallory.id, hash)),
      asToken((ctx) => usersService.setRoles(ctx, { id: mallory.id, roles: [mallory.role] }, ['admin'])),
      asToken((ctx) => createToken(ctx, t.app.services.registry, { name: 'wider', permissions: ['*'] })),
      asToken((ctx) => setRole(ctx, t.app.services.registry, mallory.role, ['*'])),
    ];
    for (const refused of await Promise.allSettled(refusals)) {
      expect(refused.status).toBe('rejected');
      const reason = (refused as PromiseRejectedResult).reason as ProblemError;
      expect(reason).toBeInstanceOf(ProblemError);
      expect(reason.code).toBe('AUTH_REQUIRED');
    }
  });

  it('the credential routes say in OpenAPI that they take the cookie only', async () => {
    const doc = (await t.app.http().get('/api/v1/openapi.json')).body as {
      paths: Record<string, Record<string, { security?: Record<string, string[]>[] }>>;
    };
    for (const [path, method] of [
      ['/api/v1/user/users/{id}/set-password', 'post'],
      ['/api/v1/user/users/{id}/roles', 'post'],
      ['/api/v1/auth/tokens', 'post'],
      ['/api/v1/auth/password', 'post'],
      ['/api/v1/auth/roles/{name}', 'put'],
      ['/api/v1/auth/roles/{name}', 'delete'],
    ] as const) {
      expect(doc.paths[path]![method]!.security, `${method} ${path}`).toEqual([{ cookieAuth: [] }]);
    }
  });
});

describe('an administrator setting their own password', () => {
  it('is refused with 403 USE_PASSWORD_CHANGE, which names the password change, and changes nothing', async () => {
    const admin = await person(t.acme, ['*']);
    const res = await acmeHttp()
      .post(`/api/v1/user/users/${admin.id}/set-password`)
      .set('Cookie', admin.cookie)
      .send({ password: 'a password without the old one' });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'USE_PASSWORD_CHANGE', route: 'POST /api/v1/auth/password' });
    expect(res.body.detail).toMatch(/POST \/api\/v1\/auth\/password, which asks for the current one/);
    expect(
      (await acmeHttp().post('/api/v1/auth/login').send({ email: admin.email, password: 'the password in force' }))
        .status,
    ).toBe(200);
    // The password change, which asks for the current one, does it.
    const change = await acmeHttp()
      .post('/api/v1/auth/password')
      .set('Cookie', admin.cookie)
      .send({ currentPassword: 'the password in force', newPassword: 'a password with the old one' });
    expect(change.status).toBe(204);
  });
});

describe("a new password and the person's personal access tokens", () => {
  const me = (token: string) => acmeHttp().get('/api/v1/auth/me').set('Authorization', bearer(token));

  it("an administrator's set-password ends them", async () => {
    const admin = await person(t.acme, ['*']);
    const ann = await person(t.acme, ['task:read']);
    const token = await tokenOf(ann.cookie, ['task:read']);
    expect((await me(token)).status).toBe(200);
    const set = await acmeHttp()
      .post(`/api/v1/user/users/${ann.id}/set-password`)
      .set('Cookie', admin.cookie)
      .send({ password: 'set by the administrator' });
    expect(set.status).toBe(200);
    const after = await me(token);
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('TOKEN_INVALID');
  });

  it('a reset ends them', async () => {
    const bob = await person(t.acme, ['task:read']);
    const token = await tokenOf(bob.cookie, ['task:read']);
    const link = await t.app.services.transactions.run(t.acme, (ctx) => mintSetPasswordToken(ctx, bob.id, 'reset'));
    const reset = await acmeHttp()
      .post('/api/v1/auth/password/reset')
      .send({ token: link, password: 'set from the mailed link' });
    expect(reset.status).toBe(204);
    const after = await me(token);
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('TOKEN_INVALID');
  });

  it('a password change keeps them', async () => {
    const cid = await person(t.acme, ['task:read']);
    const token = await tokenOf(cid.cookie, ['task:read']);
    const change = await acmeHttp()
      .post('/api/v1/auth/password')
      .set('Cookie', cid.cookie)
      .send({ currentPassword: 'the password in force', newPassword: 'changed with the old one' });
    expect(change.status).toBe(204);
    expect((await me(token)).status).toBe(200);
  });
});

describe('a token at a customer never holds an operator permission', () => {
  it('is refused with 422 PERMISSION_OPERATOR_ONLY, as a role is, even for an administrator holding *', async () => {
    const admin = await person(t.acme, ['*']);
    for (const permission of ['tenant:manage', 'billing:catalog']) {
      const res = await acmeHttp()
        .post('/api/v1/auth/tokens')
        .set('Cookie', admin.cookie)
        .send({ name: 'operator', permissions: ['task:read', permission] });
      expect(res.status, permission).toBe(422);
      expect(res.body).toMatchObject({
        code: 'PERMISSION_OPERATOR_ONLY',
        permissions: [permission],
        errors: [{ pointer: '/body/permissions/1', message: `operator permission ${permission}` }],
      });
    }
    // The operator's own administrators may.
    const operatorAdmin = await person(t.app.operator, ['*'], 'operator.localhost');
    await tokenOf(operatorAdmin.cookie, ['tenant:manage', 'billing:catalog'], 'operator.localhost');
  });
});
