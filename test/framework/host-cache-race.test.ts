import type pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { HostResolver } from '../../framework/context/host-cache.ts';
import type { Db } from '../../framework/db/pool.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

let operatorCookie: string;

const t = useTestApp();
beforeAll(async () => {
  operatorCookie = (await signInAs(t.app, t.app.operator, ['tenant:manage'])).cookie;
});

/**
 * The real database, with a gate between a query's answer and its return to the caller: the test
 * decides what happens in the gap between the host query and the cache fill.
 */
function gatedDb(db: Db) {
  let gate: { opened: Promise<void>; open(): void; reached(): void } | undefined;
  let reached: Promise<void> = Promise.resolve();
  const pool = {
    query: async (...args: Parameters<pg.Pool['query']>) => {
      const result = await (db.pool.query as (...a: unknown[]) => Promise<unknown>)(...args);
      if (gate) {
        gate.reached();
        await gate.opened;
      }
      return result;
    },
  } as unknown as pg.Pool;
  return {
    db: { ...db, pool },
    /** Holds the next answers until open() is called; arrived() settles once one is held. */
    hold() {
      let open!: () => void;
      let arrive!: () => void;
      const opened = new Promise<void>((resolve) => (open = resolve));
      reached = new Promise<void>((resolve) => (arrive = resolve));
      gate = { opened, open, reached: arrive };
      return {
        arrived: () => reached,
        open: () => {
          gate = undefined;
          open();
        },
      };
    },
  };
}

const suspend = (tenant: TenantRef) =>
  t.app.http().post(`/api/v1/tenant/tenants/${tenant.id}/suspend`).set('Cookie', operatorCookie);

describe('host cache: an eviction racing a fill', () => {
  it('a fill whose host query ran before an eviction is not cached, so a suspended tenant is not served from the cache', async () => {
    const tenant = await createCustomer(t.app, 'racer');
    const gated = gatedDb(t.app.services.db);
    const resolver = new HostResolver(gated.db, { ttlMs: 60_000 });

    // The host query answers "active" and is held before the cache is filled.
    const held = gated.hold();
    const pending = resolver.resolve('racer.localhost');
    await held.arrived();
    // In the gap: the suspension commits and its eviction reaches this resolver.
    expect((await suspend(tenant)).status).toBe(200);
    resolver.evictTenant(tenant.id);
    held.open();

    // The request already in flight may still be answered (it read the row before the suspension)…
    expect((await pending)?.id).toBe(tenant.id);
    // …but the answer is not kept: the next request reads the suspension and gets no site.
    expect(resolver.cachedHosts()).not.toContain('racer.localhost');
    expect(await resolver.resolve('racer.localhost')).toBeUndefined();
  });

  it('a fill no eviction raced is cached as before', async () => {
    await createCustomer(t.app, 'steady');
    const gated = gatedDb(t.app.services.db);
    const resolver = new HostResolver(gated.db, { ttlMs: 60_000 });
    const held = gated.hold();
    const pending = resolver.resolve('steady.localhost');
    await held.arrived();
    held.open();
    expect(await pending).toBeDefined();
    expect(resolver.cachedHosts()).toContain('steady.localhost');
  });

  it('an eviction of any tenant during a fill drops the fill (one counter per process)', async () => {
    const tenant = await createCustomer(t.app, 'bystander');
    const gated = gatedDb(t.app.services.db);
    const resolver = new HostResolver(gated.db, { ttlMs: 60_000 });
    const held = gated.hold();
    const pending = resolver.resolve('bystander.localhost');
    await held.arrived();
    resolver.evictTenant(t.app.operator.id);
    held.open();
    expect((await pending)?.id).toBe(tenant.id);
    expect(resolver.cachedHosts()).not.toContain('bystander.localhost');
    // The next fill, with no eviction in between, is cached.
    await resolver.resolve('bystander.localhost');
    expect(resolver.cachedHosts()).toContain('bystander.localhost');
  });
});
