import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { outboxEvents, storedUser } from './support.ts';

let app: TestApp;
let acme: TenantRef;
let globex: TenantRef;
let manager: { cookie: string; userId: string };
beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'acme');
  globex = await createCustomer(app, 'globex');
  manager = await signInAs(app, acme, ['user:manage']);
  await app.services.transactions.run(acme, (ctx) =>
    ctx.db.executeQuery(
      CompiledQuery.raw(`insert into roles (name, permissions) values ('editor', '{user:read}')`, []),
    ),
  );
});
afterAll(async () => {
  await app?.close();
});

const invite = (body: object, host = 'acme.localhost', cookie = manager.cookie) =>
  app.http(host).post('/api/v1/user/invitations').set('Cookie', cookie).send(body);

describe('POST /api/v1/user/invitations', () => {
  it('creates an invited user with the roles granted, normalised, and publishes user.invited', async () => {
    const res = await invite({ email: 'Ann@Acme.test', displayName: 'Ann', roles: [' Editor ', 'member', 'EDITOR'] });
    expect(res.status).toBe(201);
    expect(res.headers.location).toBe(`/api/v1/user/users/${res.body.id}`);
    expect(res.body).toMatchObject({
      email: 'Ann@Acme.test',
      displayName: 'Ann',
      status: 'invited',
      roles: ['editor', 'member'],
    });
    expect(await storedUser(app, acme, res.body.id)).toMatchObject({
      status: 'invited',
      roles: ['editor', 'member'],
      password_hash: null,
    });
    const events = (await outboxEvents(app, 'user.invited')).filter((e) => e.payload.id === res.body.id);
    expect(events).toEqual([
      { name: 'user.invited', tenantId: acme.id, payload: { id: res.body.id }, actorId: manager.userId },
    ]);
  });

  it('answers 409 for an address already present, compared case-insensitively, and publishes nothing', async () => {
    expect((await invite({ email: 'bob@acme.test' })).status).toBe(201);
    const before = (await outboxEvents(app, 'user.invited')).length;
    for (const email of ['bob@acme.test', 'BOB@ACME.TEST', 'Bob@acme.test']) {
      const res = await invite({ email });
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('ALREADY_EXISTS');
    }
    expect((await outboxEvents(app, 'user.invited')).length).toBe(before);
  });

  it('grants the roles in the same transaction: an unknown role leaves no user and no event', async () => {
    const before = (await outboxEvents(app, 'user.invited')).length;
    const res = await invite({ email: 'carl@acme.test', roles: ['member', 'wizard'] });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('ROLE_UNKNOWN');
    expect(res.body.roles).toEqual(['wizard']);
    const { rows } = await app.services.db.pool.query(`select 1 from users where email = 'carl@acme.test'`);
    expect(rows).toHaveLength(0);
    expect((await outboxEvents(app, 'user.invited')).length).toBe(before);
  });

  it('scopes the address to the tenant: another tenant may invite it, and its roles are its own', async () => {
    expect((await invite({ email: 'dan@shared.test' })).status).toBe(201);
    const globexManager = await signInAs(app, globex, ['user:manage']);
    expect((await invite({ email: 'DAN@shared.test' }, 'globex.localhost', globexManager.cookie)).status).toBe(201);
    // 'editor' exists in acme only.
    const res = await invite(
      { email: 'erin@globex.test', roles: ['editor'] },
      'globex.localhost',
      globexManager.cookie,
    );
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('ROLE_UNKNOWN');
  });

  it('validates the body', async () => {
    for (const body of [
      {},
      { email: 'not-an-address' },
      { email: 'f@acme.test', roles: 'admin' },
      { email: 'f@acme.test', status: 'active' },
    ]) {
      const res = await invite(body);
      expect(res.status, JSON.stringify(body)).toBe(422);
    }
  });
});
