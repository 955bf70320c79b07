import { beforeAll, describe, expect, it } from 'vitest';
import { createCustomer } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { HostResolver } from '../../framework/context/host-cache.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

const t = useTestApp();
const tenants: TenantRef[] = [];
beforeAll(async () => {
  for (const slug of ['lru-a', 'lru-b', 'lru-c', 'lru-d']) tenants.push(await createCustomer(t.app, slug));
});

const host = (i: number) => `lru-${'abcd'[i]}.localhost`;
/** A tenant as its host resolves: with its CORS origins (none listed here). */
const resolved = (i: number): TenantRef => ({ ...tenants[i]!, corsOrigins: [] });

describe('the host cache is a bounded LRU', () => {
  it('past its size drops the least recently used host only, not every host', async () => {
    const resolver = new HostResolver(t.app.services.db, { max: 3 });
    for (let i = 0; i < 3; i++) expect((await resolver.resolve(host(i)))?.id).toBe(tenants[i]!.id);
    // Touch a: b is now the least recently used.
    expect(resolver.cached(host(0))?.id).toBe(tenants[0]!.id);
    expect((await resolver.resolve(host(3)))?.id).toBe(tenants[3]!.id);
    expect(resolver.size).toBe(3);
    expect(resolver.cachedHosts().sort()).toEqual([host(0), host(2), host(3)]);
    expect(resolver.cached(host(1))).toBeUndefined();
  });

  it('resolves an evicted host again from the database, and caches it again', async () => {
    const resolver = new HostResolver(t.app.services.db, { max: 2 });
    for (let i = 0; i < 4; i++) await resolver.resolve(host(i));
    expect(resolver.cached(host(0))).toBeUndefined();
    expect(await resolver.resolve(host(0))).toEqual(resolved(0));
    expect(resolver.cached(host(0))).toEqual(resolved(0));
    expect(resolver.size).toBe(2);
  });

  it('evicting a tenant drops its hosts alone, including after the LRU moved entries around', async () => {
    const resolver = new HostResolver(t.app.services.db, { max: 3 });
    for (let i = 0; i < 4; i++) await resolver.resolve(host(i));
    await resolver.resolve(host(1));
    resolver.evictTenant(tenants[1]!.id);
    expect(resolver.cached(host(1))).toBeUndefined();
    expect(resolver.cachedHosts().sort()).toEqual([host(2), host(3)]);
    // A tenant evicted by the LRU first leaves nothing behind to evict.
    resolver.evictTenant(tenants[0]!.id);
    expect(resolver.size).toBe(2);
  });

  it('ages entries out after the TTL', async () => {
    const resolver = new HostResolver(t.app.services.db, { ttlMs: 30 });
    await resolver.resolve(host(0));
    expect(resolver.cached(host(0))).toEqual(resolved(0));
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(resolver.cached(host(0))).toBeUndefined();
  });
});
