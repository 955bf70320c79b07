import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createCustomer, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import type { TxContext } from '../../../framework/context/tx.ts';
import { usersService } from '../../../modules/user/users-service.ts';
import { outboxEvents, storedUser } from './support.ts';

/**
 * The users service is how other modules write users (module boundaries: the user module owns
 * the users table). Each function is exercised here in a tenant transaction, as auth and tenant
 * call it: what it stores, what it publishes, what it refuses.
 */
let app: TestApp;
let acme: TenantRef;
let other: TenantRef;
beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'svc-acme');
  other = await createCustomer(app, 'svc-other');
});
afterAll(async () => {
  await app?.close();
});

const inAcme = <T>(fn: (ctx: TxContext) => Promise<T>) => app.services.transactions.run(acme, fn);
const eventsOf = async (name: string, id: string) => (await outboxEvents(app, name)).filter((e) => e.payload.id === id);
const invited = (email: string, roles: string[] = []) => inAcme((ctx) => usersService.invite(ctx, { email, roles }));

describe('the users service', () => {
  it('invite: creates an invited user with normalised roles and publishes user.invited', async () => {
    const row = await invited('Inv@Svc.test', [' Member ']);
    expect(row).toMatchObject({ email: 'Inv@Svc.test', status: 'invited', roles: ['member'], displayName: '' });
    expect(await eventsOf('user.invited', row.id)).toEqual([
      expect.objectContaining({ tenantId: acme.id, payload: { id: row.id } }),
    ]);
    await expect(invited('inv@svc.TEST')).rejects.toMatchObject({ code: 'ALREADY_EXISTS' });
    await expect(invited('nobody-role@svc.test', ['no-such-role'])).rejects.toMatchObject({ code: 'ROLE_UNKNOWN' });
  });

  it('findByEmail and findCredentials: case-insensitive, this tenant only, soft-deleted users aside', async () => {
    const row = await invited('Find.Me@svc.test');
    await inAcme((ctx) => usersService.setPasswordHash(ctx, row.id, 'hash-one', { activate: true }));
    const found = await inAcme((ctx) => usersService.findByEmail(ctx, '  find.me@SVC.test '));
    expect(found).toMatchObject({ id: row.id, status: 'active', hasPassword: true });
    expect(found).not.toHaveProperty('passwordHash');
    expect(await inAcme((ctx) => usersService.findCredentials(ctx, 'FIND.ME@svc.test'))).toEqual({
      id: row.id,
      status: 'active',
      passwordHash: 'hash-one',
    });
    expect(
      await app.services.transactions.run(other, (ctx) => usersService.findByEmail(ctx, 'find.me@svc.test')),
    ).toBeUndefined();
    await app.services.db.pool.query('update users set deleted_at = now() where id = $1', [row.id]);
    expect(await inAcme((ctx) => usersService.findByEmail(ctx, 'find.me@svc.test'))).toBeUndefined();
    expect(await inAcme((ctx) => usersService.findCredentials(ctx, 'find.me@svc.test'))).toBeUndefined();
  });

  it('setPasswordHash: stores the hash, activates only when asked, publishes user.password_set each time', async () => {
    const row = await invited('pw@svc.test');
    await inAcme((ctx) => usersService.setPasswordHash(ctx, row.id, 'hash-a'));
    expect(await storedUser(app, acme, row.id)).toMatchObject({ status: 'invited', password_hash: 'hash-a' });
    await inAcme((ctx) => usersService.setPasswordHash(ctx, row.id, 'hash-b', { activate: true }));
    const stored = (await storedUser(app, acme, row.id))!;
    expect(stored).toMatchObject({ status: 'active', password_hash: 'hash-b' });
    expect(stored.updated_at.getTime()).toBeGreaterThan(new Date(row.updatedAt).getTime());
    expect(await eventsOf('user.password_set', row.id)).toHaveLength(2);
  });

  it('setPasswordHash: refuses a deactivated user with 409 INVALID_STATE, writing and publishing nothing', async () => {
    const row = await invited('gone@svc.test');
    await app.services.db.pool.query(`update users set status = 'deactivated' where id = $1`, [row.id]);
    await expect(
      inAcme((ctx) => usersService.setPasswordHash(ctx, row.id, 'hash-x', { activate: true })),
    ).rejects.toMatchObject({ code: 'INVALID_STATE' });
    expect(await storedUser(app, acme, row.id)).toMatchObject({ status: 'deactivated', password_hash: null });
    expect(await eventsOf('user.password_set', row.id)).toEqual([]);
    // A user of another tenant is out of reach the same way: row-level security hides it.
    await expect(
      app.services.transactions.run(other, (ctx) => usersService.setPasswordHash(ctx, row.id, 'hash-y')),
    ).rejects.toMatchObject({ code: 'INVALID_STATE' });
  });

  it('lock: answers the live user’s status, or nothing for an unknown or soft-deleted one', async () => {
    const row = await invited('lock@svc.test');
    expect(await inAcme((ctx) => usersService.lock(ctx, row.id))).toEqual({ id: row.id, status: 'invited' });
    expect(await app.services.transactions.run(other, (ctx) => usersService.lock(ctx, row.id))).toBeUndefined();
    await app.services.db.pool.query('update users set deleted_at = now() where id = $1', [row.id]);
    expect(await inAcme((ctx) => usersService.lock(ctx, row.id))).toBeUndefined();
  });

  it('findById and lockCredentials: the live user of this tenant, the hash only for the password check', async () => {
    const row = await invited('By.Id@svc.test', ['member']);
    await inAcme((ctx) => usersService.setPasswordHash(ctx, row.id, 'hash-id'));
    const found = await inAcme((ctx) => usersService.findById(ctx, row.id));
    expect(found).toMatchObject({
      id: row.id,
      email: 'By.Id@svc.test',
      status: 'invited',
      roles: ['member'],
      displayName: '',
    });
    expect(found).not.toHaveProperty('passwordHash');
    expect(await inAcme((ctx) => usersService.lockCredentials(ctx, row.id))).toEqual({
      id: row.id,
      status: 'invited',
      passwordHash: 'hash-id',
    });
    expect(await app.services.transactions.run(other, (ctx) => usersService.findById(ctx, row.id))).toBeUndefined();
    expect(
      await app.services.transactions.run(other, (ctx) => usersService.lockCredentials(ctx, row.id)),
    ).toBeUndefined();
    await app.services.db.pool.query('update users set deleted_at = now() where id = $1', [row.id]);
    expect(await inAcme((ctx) => usersService.findById(ctx, row.id))).toBeUndefined();
    expect(await inAcme((ctx) => usersService.lockCredentials(ctx, row.id))).toBeUndefined();
  });

  it('lock({ share: true }): two sign-ins share the row, while a writer’s lock waits for them', async () => {
    const row = await invited('share@svc.test');
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holder = inAcme(async (ctx) => {
      await usersService.lock(ctx, row.id, { share: true });
      locked();
      await held;
    });
    await isLocked;
    const withTimeout = <T>(fn: (ctx: TxContext) => Promise<T>) =>
      inAcme(async (ctx) => {
        await sql`set local lock_timeout = '300ms'`.execute(ctx.db);
        return fn(ctx);
      });
    try {
      expect(await withTimeout((ctx) => usersService.lock(ctx, row.id, { share: true }))).toEqual({
        id: row.id,
        status: 'invited',
      });
      await expect(withTimeout((ctx) => usersService.lock(ctx, row.id))).rejects.toMatchObject({ code: '55P03' });
    } finally {
      release();
      await holder;
    }
  });

  it('setRoles: stores the normalised set and publishes user.roles_set; the same set writes and publishes nothing', async () => {
    const row = await invited('roles@svc.test', ['member']);
    const held = await inAcme((ctx) => usersService.setRoles(ctx, row, ['Admin', 'member', 'admin']));
    expect(held).toEqual(['admin', 'member']);
    const afterFirst = (await storedUser(app, acme, row.id))!;
    expect(afterFirst.roles).toEqual(['admin', 'member']);
    expect(await eventsOf('user.roles_set', row.id)).toEqual([
      expect.objectContaining({ payload: { id: row.id, before: ['member'], after: ['admin', 'member'] } }),
    ]);
    expect(await inAcme((ctx) => usersService.setRoles(ctx, { id: row.id, roles: held }, ['member', 'ADMIN']))).toEqual(
      ['admin', 'member'],
    );
    expect((await storedUser(app, acme, row.id))!.updated_at).toEqual(afterFirst.updated_at);
    expect(await eventsOf('user.roles_set', row.id)).toHaveLength(1);
    await expect(
      inAcme((ctx) => usersService.setRoles(ctx, { id: row.id, roles: held }, ['admin', 'ghost'])),
    ).rejects.toMatchObject({ code: 'ROLE_UNKNOWN' });
    expect((await storedUser(app, acme, row.id))!.roles).toEqual(['admin', 'member']);
  });
});
