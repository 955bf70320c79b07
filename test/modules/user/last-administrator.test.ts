import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { createCustomer, signInAs, startTestApp, OPERATOR_HOST, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { outboxEvents, signInWithRoles, storedUser } from './support.ts';
import { usersService } from '../../../modules/user/users-service.ts';

/**
 * Issue 27, point 3: a tenant (the operator tenant too) never loses its last active user holding
 * every permission (*). Taking the role from that user, deactivating or deleting them, dropping *
 * from the role that grants it, or deleting that role is 409 LAST_ADMINISTRATOR with nothing
 * written; with another administrator the same changes pass. Two administrators removing each
 * other at once leave one.
 */
let app: TestApp;
let counter = 0;

beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

interface World {
  tenant: TenantRef;
  host: string;
  /** The tenant's one administrator (role admin, which holds *). */
  admin: { userId: string; cookie: string };
}

/** A fresh tenant whose only active administrator is `admin`. */
async function world(): Promise<World> {
  counter += 1;
  const slug = `last-admin-${counter}`;
  const tenant = await createCustomer(app, slug);
  const admin = await signInWithRoles(app, tenant, ['admin']);
  return { tenant, host: `${slug}.localhost`, admin };
}

const http = (w: World) => app.http(w.host);
const setRoles = (w: World, cookie: string, id: string, roles: string[]) =>
  http(w).post(`/api/v1/user/users/${id}/roles`).set('Cookie', cookie).send({ roles });
const deactivate = (w: World, cookie: string, id: string) =>
  http(w).post(`/api/v1/user/users/${id}/deactivate`).set('Cookie', cookie);
const remove = (w: World, cookie: string, id: string) =>
  http(w).delete(`/api/v1/user/users/${id}`).set('Cookie', cookie);
const putRole = (w: World, cookie: string, name: string, permissions: string[]) =>
  http(w).put(`/api/v1/auth/roles/${name}`).set('Cookie', cookie).send({ permissions });
const deleteRole = (w: World, cookie: string, name: string) =>
  http(w).delete(`/api/v1/auth/roles/${name}`).set('Cookie', cookie);

async function addRole(tenant: TenantRef, name: string, permissions: string[]): Promise<void> {
  await app.services.transactions.run(tenant, (ctx) =>
    ctx.db.executeQuery(
      CompiledQuery.raw('insert into roles (name, permissions) values ($1, $2)', [name, permissions]),
    ),
  );
}

async function role(tenant: TenantRef, name: string): Promise<string[] | undefined> {
  return app.services.transactions.run(tenant, async (ctx) => {
    const { rows } = await ctx.db.executeQuery<{ permissions: string[] }>(
      CompiledQuery.raw('select permissions from roles where name = $1', [name]),
    );
    return rows[0]?.permissions;
  });
}

/** The tenant's administrators: live, active users holding a role with *. */
async function administrators(tenant: TenantRef): Promise<string[]> {
  return app.services.transactions.run(tenant, async (ctx) => {
    const { rows } = await ctx.db.executeQuery<{ id: string }>(
      CompiledQuery.raw(
        `select u.id from users u where u.status = 'active' and u.deleted_at is null
            and exists (select 1 from roles r where r.name = any(u.roles) and '*' = any(r.permissions)) order by u.id`,
        [],
      ),
    );
    return rows.map((r) => r.id);
  });
}

function expectLastAdministrator(res: {
  status: number;
  body: { code?: string; detail?: string };
  headers: Record<string, unknown>;
}) {
  expect(res.status).toBe(409);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body.code).toBe('LAST_ADMINISTRATOR');
  expect(res.body.detail).toMatch(/administrator/);
}

describe('the last administrator cannot be removed', () => {
  it('taking the role from them (their own roles set to []) is 409, nothing changes, and they stay an administrator', async () => {
    const w = await world();
    const before = (await outboxEvents(app, 'user.roles_set')).length;
    expectLastAdministrator(await setRoles(w, w.admin.cookie, w.admin.userId, []));
    expectLastAdministrator(await setRoles(w, w.admin.cookie, w.admin.userId, ['member']));
    expect((await storedUser(app, w.tenant, w.admin.userId))!.roles).toEqual(['admin']);
    expect((await outboxEvents(app, 'user.roles_set')).length).toBe(before);
    expect((await http(w).get('/api/v1/user/users').set('Cookie', w.admin.cookie)).status).toBe(200);
  });

  it('deactivating them is 409 and they stay active', async () => {
    const w = await world();
    expectLastAdministrator(await deactivate(w, w.admin.cookie, w.admin.userId));
    expect((await storedUser(app, w.tenant, w.admin.userId))!.status).toBe('active');
    expect((await outboxEvents(app, 'user.deactivated')).filter((e) => e.payload.id === w.admin.userId)).toEqual([]);
  });

  it('deleting them is 409 and they stay', async () => {
    const w = await world();
    expectLastAdministrator(await remove(w, w.admin.cookie, w.admin.userId));
    expect((await storedUser(app, w.tenant, w.admin.userId))!.deleted_at).toBeNull();
  });

  it('dropping * from the role that grants it is 409 and the role keeps *', async () => {
    const w = await world();
    expectLastAdministrator(await putRole(w, w.admin.cookie, 'admin', []));
    expectLastAdministrator(await putRole(w, w.admin.cookie, 'admin', ['user:manage', 'role:manage']));
    expect(await role(w.tenant, 'admin')).toEqual(['*']);
  });

  it('deleting the role that grants it is 409; the role and the user’s hold on it stay', async () => {
    const w = await world();
    expectLastAdministrator(await deleteRole(w, w.admin.cookie, 'admin'));
    expect(await role(w.tenant, 'admin')).toEqual(['*']);
    expect((await storedUser(app, w.tenant, w.admin.userId))!.roles).toEqual(['admin']);
  });

  it('an invited or deactivated user holding admin does not count as another administrator', async () => {
    const w = await world();
    const invited = (
      await http(w)
        .post('/api/v1/user/invitations')
        .set('Cookie', w.admin.cookie)
        .send({ email: 'invited@last-admin.test', roles: ['admin'] })
    ).body;
    expect(invited.status).toBe('invited');
    const other = await signInWithRoles(app, w.tenant, ['admin']);
    expect((await deactivate(w, w.admin.cookie, other.userId)).status).toBe(200);
    expectLastAdministrator(await deactivate(w, w.admin.cookie, w.admin.userId));
    expect(await administrators(w.tenant)).toEqual([w.admin.userId]);
  });

  it('holds in the operator tenant too', async () => {
    const operatorAdmin = await signInWithRoles(app, app.operator, ['admin']);
    const res = await app
      .http(OPERATOR_HOST)
      .post(`/api/v1/user/users/${operatorAdmin.userId}/roles`)
      .set('Cookie', operatorAdmin.cookie)
      .send({ roles: [] });
    expectLastAdministrator(res);
    expectLastAdministrator(
      await app
        .http(OPERATOR_HOST)
        .post(`/api/v1/user/users/${operatorAdmin.userId}/deactivate`)
        .set('Cookie', operatorAdmin.cookie),
    );
    expectLastAdministrator(
      await app
        .http(OPERATOR_HOST)
        .put('/api/v1/auth/roles/admin')
        .set('Cookie', operatorAdmin.cookie)
        .send({ permissions: [] }),
    );
    expect(await administrators(app.operator)).toEqual([operatorAdmin.userId]);
  });
});

describe('with another administrator the same changes pass', () => {
  it('their roles can be taken, they can be deactivated and deleted', async () => {
    const w = await world();
    const b = await signInWithRoles(app, w.tenant, ['admin']);
    const c = await signInWithRoles(app, w.tenant, ['admin']);
    const d = await signInWithRoles(app, w.tenant, ['admin']);
    expect((await setRoles(w, w.admin.cookie, b.userId, ['member'])).status).toBe(200);
    expect((await deactivate(w, w.admin.cookie, c.userId)).status).toBe(200);
    expect((await remove(w, w.admin.cookie, d.userId)).status).toBe(204);
    // An administrator may step down themselves while another remains.
    const e = await signInWithRoles(app, w.tenant, ['admin']);
    expect((await setRoles(w, w.admin.cookie, w.admin.userId, [])).status).toBe(200);
    expect(await administrators(w.tenant)).toEqual([e.userId]);
    expectLastAdministrator(await deactivate(w, e.cookie, e.userId));
  });

  it('a role can lose * or be deleted when another role makes someone an administrator; deleting takes it from its holders', async () => {
    const w = await world();
    await addRole(w.tenant, 'owner', ['*']);
    const owner = await signInWithRoles(app, w.tenant, ['owner']);
    const put = await putRole(w, w.admin.cookie, 'admin', ['user:read']);
    expect(put.status).toBe(200);
    expect(put.body.permissions).toEqual(['user:read']);
    expect((await putRole(w, owner.cookie, 'admin', ['*'])).status).toBe(200);
    const before = (await outboxEvents(app)).length;
    expect((await deleteRole(w, owner.cookie, 'admin')).status).toBe(204);
    expect(await role(w.tenant, 'admin')).toBeUndefined();
    expect((await storedUser(app, w.tenant, w.admin.userId))!.roles).toEqual([]);
    const events = (await outboxEvents(app)).slice(before);
    expect(events.map((e) => [e.name, e.payload])).toEqual(
      expect.arrayContaining([
        ['user.roles_set', { id: w.admin.userId, before: ['admin'], after: [] }],
        ['auth.role_set', { name: 'admin', before: ['*'], after: null }],
      ]),
    );
    expect(await administrators(w.tenant)).toEqual([owner.userId]);
    expectLastAdministrator(await deleteRole(w, owner.cookie, 'owner'));
    expect((await deleteRole(w, owner.cookie, 'admin')).status).toBe(404);
  });

  it('a tenant that has no administrator yet is not refused what cannot make it worse', async () => {
    counter += 1;
    const tenant = await createCustomer(app, `last-admin-${counter}`);
    const w = { tenant, host: `last-admin-${counter}.localhost` } as World;
    const manager = await signInAs(app, tenant, ['user:manage', 'role:manage']);
    const someone = await signInWithRoles(app, tenant, ['member']);
    expect((await deactivate(w, manager.cookie, someone.userId)).status).toBe(200);
    expect((await putRole(w, manager.cookie, 'admin', [])).status).toBe(200);
    expect((await deleteRole(w, manager.cookie, 'admin')).status).toBe(204);
  });
});

/**
 * Exactly one of two concurrent removals succeeds. The other is refused: 409 LAST_ADMINISTRATOR
 * when it read its caller's permissions before the first committed (it then waits for the
 * administrators' lock and counts after), or 403/401 when it started after the first had already
 * taken its caller's administration away.
 */
function expectOneOfTwo(pair: { status: number; body: { code?: string } }[], what: string) {
  expect(
    pair.filter((r) => r.status === 200),
    what,
  ).toHaveLength(1);
  const refused = pair.find((r) => r.status !== 200)!;
  expect(['LAST_ADMINISTRATOR', 'AUTH_FORBIDDEN', 'AUTH_REQUIRED'], what).toContain(refused.body.code);
}

describe('concurrently', () => {
  it('of two overlapping removals through the users service, the second waits for the first to commit and is refused', async () => {
    const w = await world();
    const b = await signInWithRoles(app, w.tenant, ['admin']);
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let wrote!: () => void;
    const firstWrote = new Promise<void>((resolve) => {
      wrote = resolve;
    });
    // The first takes B's role and keeps its transaction open; A is still an administrator then.
    const first = app.services.transactions.run(w.tenant, async (ctx) => {
      await usersService.setRoles(ctx, (await usersService.findById(ctx, b.userId))!, []);
      wrote();
      await held;
    });
    await firstWrote;
    let secondSettled = false;
    const second = app.services.transactions
      .run(w.tenant, async (ctx) => usersService.setRoles(ctx, (await usersService.findById(ctx, w.admin.userId))!, []))
      .finally(() => {
        secondSettled = true;
      });
    second.catch(() => {});
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(secondSettled, "the second waits on the administrators' lock").toBe(false);
    release();
    await first;
    await expect(second).rejects.toMatchObject({ code: 'LAST_ADMINISTRATOR' });
    expect(await administrators(w.tenant)).toEqual([w.admin.userId]);
  });

  it('two administrators removing each other’s role at once leave exactly one', async () => {
    for (let round = 0; round < 5; round += 1) {
      const w = await world();
      const b = await signInWithRoles(app, w.tenant, ['admin']);
      const pair = await Promise.all([
        setRoles(w, w.admin.cookie, b.userId, []),
        setRoles(w, b.cookie, w.admin.userId, []),
      ]);
      expectOneOfTwo(pair, `round ${round}`);
      expect(await administrators(w.tenant)).toHaveLength(1);
    }
  });

  it('two administrators deactivating each other at once, or one dropping * while the other is removed, leave one', async () => {
    for (let round = 0; round < 3; round += 1) {
      const w = await world();
      const b = await signInWithRoles(app, w.tenant, ['admin']);
      const pair = await Promise.all([
        deactivate(w, w.admin.cookie, b.userId),
        deactivate(w, b.cookie, w.admin.userId),
      ]);
      expectOneOfTwo(pair, `round ${round}`);
      expect(await administrators(w.tenant)).toHaveLength(1);

      const v = await world();
      await addRole(v.tenant, 'owner', ['*']);
      const owner = await signInWithRoles(app, v.tenant, ['owner']);
      const mixed = await Promise.all([
        putRole(v, owner.cookie, 'admin', []),
        setRoles(v, v.admin.cookie, owner.userId, []),
      ]);
      expectOneOfTwo(mixed, `round ${round}`);
      expect(await administrators(v.tenant)).toHaveLength(1);
    }
  });
});

/** The form token of an admin page, as the browser holding `cookie` gets it. */
async function formToken(w: World, path: string, cookie: string): Promise<{ cookie: string; csrf: string }> {
  const page = await http(w).get(path).set('Cookie', cookie);
  expect(page.status).toBe(200);
  const set = ([] as string[]).concat(page.headers['set-cookie'] ?? []).map((c) => c.split(';', 1)[0]!);
  const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)![1]!;
  return { cookie: [cookie, ...set].join('; '), csrf };
}

describe('the admin screens', () => {
  it('the generated deactivate and delete forms and the role form answer the refusal as a page a person can read', async () => {
    const w = await world();
    const message = /last administrator of the tenant/;

    const deactivatePath = `/admin/user/users/${w.admin.userId}/deactivate`;
    let token = await formToken(w, deactivatePath, w.admin.cookie);
    const deactivated = await http(w)
      .post(deactivatePath)
      .set('Cookie', token.cookie)
      .type('form')
      .send({ csrf: token.csrf });
    expect(deactivated.status).toBe(409);
    expect(deactivated.headers['content-type']).toMatch(/^text\/html/);
    expect(deactivated.text).toMatch(message);
    expect(deactivated.text).toContain(`action="${deactivatePath}"`);

    const deletePath = `/admin/user/users/${w.admin.userId}/delete`;
    token = await formToken(w, deletePath, w.admin.cookie);
    const deleted = await http(w).post(deletePath).set('Cookie', token.cookie).type('form').send({ csrf: token.csrf });
    expect(deleted.status).toBe(409);
    expect(deleted.text).toMatch(message);

    const rolePath = '/admin/auth/roles/admin';
    token = await formToken(w, rolePath, w.admin.cookie);
    const dropped = await http(w)
      .post(rolePath)
      .set('Cookie', token.cookie)
      .type('form')
      .send({ csrf: token.csrf, permissions: ['user:read'] });
    expect(dropped.status).toBe(409);
    expect(dropped.headers['content-type']).toMatch(/^text\/html/);
    // In people's words, the same sentence as the user forms (framework/admin/errors.ts), with the code only in data-code.
    expect(dropped.text).toMatch(message);
    expect(dropped.text).toContain('data-code="LAST_ADMINISTRATOR"');
    // The role's form again, as posted, not the generic error page.
    expect(dropped.text).toContain(`action="${rolePath}"`);

    expect(await role(w.tenant, 'admin')).toEqual(['*']);
    expect(await administrators(w.tenant)).toEqual([w.admin.userId]);
  });
});
