import { beforeAll, describe, expect, it } from 'vitest';
import Type from 'typebox';
import { CompiledQuery } from 'kysely';
import { createCustomer, signInAs, type SignedIn } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { allModules } from '../../modules/index.ts';
import { defineModule, defineRoute, type Access } from '../../framework/entity/define.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

/** One route per kind of access, each answering who the caller is and what its transaction saw. */
const Answer = Type.Object({
  userId: Type.Union([Type.String(), Type.Null()]),
  now: Type.String(),
  lastSeenAt: Type.Union([Type.String(), Type.Null()]),
});

function probe(path: string, access: Access) {
  return defineRoute({
    method: 'GET',
    url: `/api/v1/guardprobe/${path}`,
    operationId: `guardprobe-probe-${path}`,
    summary: `Guard probe: ${path}`,
    access,
    schema: { response: { 200: Answer } },
    handler: async ({ tx }) => {
      const { rows } = await tx.db.executeQuery<{ last_seen_at: Date | null }>(
        CompiledQuery.raw('select (select last_seen_at from sessions where id = $1) as last_seen_at', [
          tx.session?.id ?? '00000000-0000-0000-0000-000000000000',
        ]),
      );
      return {
        userId: tx.session?.userId ?? null,
        now: tx.now.toISOString(),
        lastSeenAt: rows[0]!.last_seen_at?.toISOString() ?? null,
      };
    },
  });
}

const guardProbeModule = defineModule({
  name: 'guardprobe',
  routes: [
    probe('public', 'public'),
    probe('optional', 'optional'),
    probe('signed-in', 'signedIn'),
    probe('read', { permission: 'widget:read' }),
    probe('operate', { permission: 'widget:operate' }),
    ...(['read', 'operate'] as const).map((kind) =>
      defineRoute({
        method: 'POST',
        url: `/api/v1/guardprobe/${kind}-body`,
        operationId: `guardprobe-probe-${kind}-body`,
        summary: `Guard probe with a body: ${kind}`,
        access: { permission: kind === 'read' ? 'widget:read' : 'widget:operate' },
        schema: {
          body: Type.Object({ size: Type.Integer() }, { additionalProperties: false }),
          response: { 200: Type.Object({ size: Type.Integer() }) },
        },
        handler: async ({ body }) => ({ size: body.size }),
      }),
    ),
    defineRoute({
      method: 'GET',
      url: '/api/v1/guardprobe/no-transaction',
      operationId: 'guardprobe-probe-no-transaction',
      summary: 'Guard probe: a route that opens its own transactions',
      access: { permission: 'widget:read' },
      transaction: 'none',
      schema: { response: { 200: Type.Object({ userId: Type.Union([Type.String(), Type.Null()]) }) } },
      handler: async ({ session }) => ({ userId: session?.userId ?? null }),
    }),
  ],
});

const CUSTOMER = 'guard.localhost';
const OTHER = 'guard-other.localhost';
let customer: TenantRef;
let other: TenantRef;

const t = useTestApp({ modules: [...allModules, testkitModule, guardProbeModule] });
beforeAll(async () => {
  customer = await createCustomer(t.app, 'guard', CUSTOMER);
  other = await createCustomer(t.app, 'guard-other', OTHER);
});

const call = (host: string, path: string, who?: SignedIn) => {
  const req = t.app.http(host).get(`/api/v1/guardprobe/${path}`);
  return who ? req.set('Cookie', who.cookie) : req;
};

async function roleOf(user: SignedIn): Promise<string> {
  const { rows } = await t.app.services.db.pool.query<{ roles: string[] }>('select roles from users where id = $1', [
    user.userId,
  ]);
  return rows[0]!.roles[0]!;
}

async function setPermissions(tenant: TenantRef, role: string, permissions: string[]): Promise<void> {
  await t.app.services.db.pool.query('update roles set permissions = $3 where tenant_id = $1 and name = $2', [
    tenant.id,
    role,
    permissions,
  ]);
}

function expectProblem(
  res: { status: number; headers: Record<string, string>; body: { code: string } },
  status: number,
  code: string,
) {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body.code).toBe(code);
}

describe('public, optional and signed-in routes', () => {
  it('serves a public route to anybody, without resolving a session', async () => {
    const user = await signInAs(t.app, customer, []);
    expect((await call(CUSTOMER, 'public')).status).toBe(200);
    const res = await call(CUSTOMER, 'public', user);
    expect(res.status).toBe(200);
    expect(res.body.userId).toBeNull();
  });

  it('serves an optional route to anybody, with the session when there is one', async () => {
    const user = await signInAs(t.app, customer, []);
    expect((await call(CUSTOMER, 'optional')).body.userId).toBeNull();
    expect((await call(CUSTOMER, 'optional', user)).body.userId).toBe(user.userId);
  });

  it("answers 401 AUTH_REQUIRED without a session, with an unknown or expired one, and with another tenant's", async () => {
    expectProblem(await call(CUSTOMER, 'signed-in'), 401, 'AUTH_REQUIRED');
    expectProblem(
      await t.app.http(CUSTOMER).get('/api/v1/guardprobe/signed-in').set('Cookie', 'app_session=forged'),
      401,
      'AUTH_REQUIRED',
    );

    const foreign = await signInAs(t.app, other, ['*']);
    expectProblem(await call(CUSTOMER, 'signed-in', foreign), 401, 'AUTH_REQUIRED');
    expect((await call(OTHER, 'signed-in', foreign)).status).toBe(200);

    const expired = await signInAs(t.app, customer, ['*']);
    await t.app.services.db.pool.query(
      `update sessions set expires_at = now() - interval '1 second' where user_id = $1`,
      [expired.userId],
    );
    expectProblem(await call(CUSTOMER, 'signed-in', expired), 401, 'AUTH_REQUIRED');
  });

  it("answers 401 for a deactivated user's session", async () => {
    const user = await signInAs(t.app, customer, ['*']);
    expect((await call(CUSTOMER, 'signed-in', user)).body.userId).toBe(user.userId);
    await t.app.services.db.pool.query(`update users set status = 'deactivated' where id = $1`, [user.userId]);
    expectProblem(await call(CUSTOMER, 'signed-in', user), 401, 'AUTH_REQUIRED');
  });
});

describe('refusal order', () => {
  it('answers 401 to a caller with no session cookie before looking at the body', async () => {
    expectProblem(
      await t.app.http(CUSTOMER).post('/api/v1/guardprobe/read-body').send({ size: 'big' }),
      401,
      'AUTH_REQUIRED',
    );
  });

  it('validates the body of a signed-in caller (422), and serves a valid one', async () => {
    const reader = await signInAs(t.app, customer, ['widget:read']);
    const bad = await t.app
      .http(CUSTOMER)
      .post('/api/v1/guardprobe/read-body')
      .set('Cookie', reader.cookie)
      .send({ size: 'big' });
    expectProblem(bad, 422, 'VALIDATION_FAILED');
    const good = await t.app
      .http(CUSTOMER)
      .post('/api/v1/guardprobe/read-body')
      .set('Cookie', reader.cookie)
      .send({ size: 3 });
    expect(good.body).toEqual({ size: 3 });
  });
});

describe('permission routes', () => {
  it('answers 401 AUTH_REQUIRED when not signed in and 403 AUTH_FORBIDDEN without the permission', async () => {
    expectProblem(await call(CUSTOMER, 'read'), 401, 'AUTH_REQUIRED');
    const user = await signInAs(t.app, customer, ['widget:write']);
    expectProblem(await call(CUSTOMER, 'read', user), 403, 'AUTH_FORBIDDEN');
    expectProblem(
      await t.app.http(CUSTOMER).get('/api/v1/testkit/widgets').set('Cookie', user.cookie),
      403,
      'AUTH_FORBIDDEN',
    );
    expect((await call(CUSTOMER, 'signed-in', user)).status).toBe(200);
  });

  it('serves a caller whose stored role grants the permission, or the wildcard *', async () => {
    const reader = await signInAs(t.app, customer, ['widget:read']);
    expect((await call(CUSTOMER, 'read', reader)).body.userId).toBe(reader.userId);
    const admin = await signInAs(t.app, customer, ['*']);
    expect((await call(CUSTOMER, 'read', admin)).status).toBe(200);
    expect(
      (
        await t.app
          .http(CUSTOMER)
          .post('/api/v1/testkit/widgets')
          .set('Cookie', admin.cookie)
          .send({ name: 'star', size: 1, color: 'red' })
      ).status,
    ).toBe(201);
  });

  it('resolves permissions from the stored roles on every request, with no cache', async () => {
    const user = await signInAs(t.app, customer, []);
    const role = await roleOf(user);
    expectProblem(await call(CUSTOMER, 'read', user), 403, 'AUTH_FORBIDDEN');
    await setPermissions(customer, role, ['widget:read']);
    expect((await call(CUSTOMER, 'read', user)).status).toBe(200);
    await setPermissions(customer, role, []);
    expectProblem(await call(CUSTOMER, 'read', user), 403, 'AUTH_FORBIDDEN');
    await setPermissions(customer, role, ['*']);
    expect((await call(CUSTOMER, 'read', user)).status).toBe(200);
    // Taking the role away from the user works the same way.
    await t.app.services.db.pool.query(`update users set roles = '{}' where id = $1`, [user.userId]);
    expectProblem(await call(CUSTOMER, 'read', user), 403, 'AUTH_FORBIDDEN');
  });

  it("resolves the caller inside the request's own transaction", async () => {
    // A session last seen long ago is touched, at the transaction's clock reading, while it is
    // resolved; the handler seeing that uncommitted touch proves it runs in the same transaction.
    const user = await signInAs(t.app, customer, ['widget:read']);
    await t.app.services.db.pool.query(
      `update sessions set last_seen_at = now() - interval '1 hour' where user_id = $1`,
      [user.userId],
    );
    const res = await call(CUSTOMER, 'read', user);
    expect(res.status).toBe(200);
    expect(res.body.lastSeenAt).toBe(res.body.now);
  });

  it('guards a route that opens its own transactions the same way', async () => {
    expectProblem(await call(CUSTOMER, 'no-transaction'), 401, 'AUTH_REQUIRED');
    const writer = await signInAs(t.app, customer, ['widget:write']);
    expectProblem(await call(CUSTOMER, 'no-transaction', writer), 403, 'AUTH_FORBIDDEN');
    const reader = await signInAs(t.app, customer, ['widget:read']);
    expect((await call(CUSTOMER, 'no-transaction', reader)).body.userId).toBe(reader.userId);
  });
});

describe('operator permissions', () => {
  it('refuses an operator permission at a customer tenant with 403 AUTH_NOT_OPERATOR, even to a caller holding *', async () => {
    const admin = await signInAs(t.app, customer, ['*']);
    expectProblem(await call(CUSTOMER, 'operate', admin), 403, 'AUTH_NOT_OPERATOR');
  });

  it('refuses before the session or the roles are read: the anonymous caller gets the same 403, and no session is touched', async () => {
    expectProblem(await call(CUSTOMER, 'operate'), 403, 'AUTH_NOT_OPERATOR');
    const user = await signInAs(t.app, customer, ['widget:operate']);
    await t.app.services.db.pool.query(
      `update sessions set last_seen_at = now() - interval '1 hour' where user_id = $1`,
      [user.userId],
    );
    const before = await t.app.services.db.pool.query('select last_seen_at from sessions where user_id = $1', [
      user.userId,
    ]);
    expectProblem(await call(CUSTOMER, 'operate', user), 403, 'AUTH_NOT_OPERATOR');
    const after = await t.app.services.db.pool.query('select last_seen_at from sessions where user_id = $1', [
      user.userId,
    ]);
    expect(after.rows[0].last_seen_at).toEqual(before.rows[0].last_seen_at);
  });

  it('refuses before the body is validated: an invalid body to an operator route still gets 403 AUTH_NOT_OPERATOR', async () => {
    const admin = await signInAs(t.app, customer, ['*']);
    const res = await t.app
      .http(CUSTOMER)
      .post('/api/v1/guardprobe/operate-body')
      .set('Cookie', admin.cookie)
      .send({ size: 'big', extra: 1 });
    expectProblem(res, 403, 'AUTH_NOT_OPERATOR');
    expectProblem(
      await t.app.http(CUSTOMER).post('/api/v1/guardprobe/operate-body').send({ size: 'big' }),
      403,
      'AUTH_NOT_OPERATOR',
    );
  });

  it('applies the ordinary guard at the operator tenant', async () => {
    expectProblem(await call('operator.localhost', 'operate'), 401, 'AUTH_REQUIRED');
    const plain = await signInAs(t.app, t.app.operator, ['widget:read']);
    expectProblem(await call('operator.localhost', 'operate', plain), 403, 'AUTH_FORBIDDEN');
    const operator = await signInAs(t.app, t.app.operator, ['widget:operate']);
    expect((await call('operator.localhost', 'operate', operator)).body.userId).toBe(operator.userId);
    const admin = await signInAs(t.app, t.app.operator, ['*']);
    expect((await call('operator.localhost', 'operate', admin)).status).toBe(200);
  });
});
