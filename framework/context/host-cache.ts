import { LRUCache } from 'lru-cache';
import type { Db } from '../db/pool.ts';
import type { ChangeListener } from '../db/listener.ts';
import type { TenantRef } from './tenant.ts';
import type { HostDirectory } from '../contracts/services.ts';

export const HOST_EVICTION_CHANNEL = 'tenantry_hosts';

/** Hosts a process keeps resolved by default: ten times the 10,000 tenants the bench measures. */
export const HOST_CACHE_MAX = 100_000;

/**
 * Host → tenant resolution with an in-process cache. Only served tenants are cached; an unknown
 * or suspended host costs one indexed query each time, so a new host or a lifted suspension needs
 * no invalidation. Suspension and host changes are broadcast with NOTIFY so every process drops the
 * tenant's entries at once; the TTL only bounds staleness should a notification be lost.
 *
 * The cache is a bounded LRU (lru-cache): past `max` hosts the least recently used one makes room,
 * so a process serving more hosts than it keeps pays one query for a cold host, never a cliff
 * where every host misses at once (the clear-all at a size limit it replaces).
 * A tenant's hosts are also indexed by tenant, kept in step by the cache's dispose callback, so an
 * eviction costs the tenant's hosts, not a walk over every cached host.
 *
 * A fill races an eviction: the host query may read the row before a suspension commits while the
 * eviction arrives before the answer is cached. Every eviction bumps a generation counter, and a
 * fill whose query started under an older generation is not cached (the request that asked is
 * still answered, as if it had arrived just before the eviction).
 */
export class HostResolver implements HostDirectory {
  private readonly cache: LRUCache<string, TenantRef>;
  private readonly hostsByTenant = new Map<string, Set<string>>();
  /** Bumped on every eviction; evictions are rare, so one counter per process is enough. */
  private generation = 0;
  private readonly db: Db;

  constructor(db: Db, options: { ttlMs?: number; max?: number } = {}) {
    this.db = db;
    this.cache = new LRUCache<string, TenantRef>({
      // Bounded by count through maxSize (each host weighs 1), not `max`: with `max` lru-cache
      // allocates its whole index up front, about 4 MiB for 100,000 hosts in every process,
      // however few tenants it serves; with maxSize the index grows with the hosts cached.
      maxSize: options.max ?? HOST_CACHE_MAX,
      sizeCalculation: () => 1,
      // The TTL is read on get (lru-cache's own monotonic clock), no timer per entry.
      ttl: options.ttlMs ?? 60_000,
      dispose: (tenant, host) => this.unindex(tenant.id, host),
    });
  }

  /** The cached tenant of a served host, without waiting: undefined when resolve() must ask. */
  cached(host: string): TenantRef | undefined {
    return this.cache.get(host);
  }

  async resolve(host: string): Promise<TenantRef | undefined> {
    const hit = this.cached(host);
    if (hit) return hit;
    const generation = this.generation;
    const { rows } = await this.db.pool.query<{
      id: string;
      slug: string;
      is_operator: boolean;
      status: string;
      cors_origins: string[];
    }>(
      `select t.id, t.slug, t.is_operator, t.status, t.cors_origins
         from tenant_hosts h join tenants t on t.id = h.tenant_id
        where h.host = $1`,
      [host],
    );
    const row = rows[0];
    if (row?.status !== 'active') {
      this.cache.delete(host);
      return undefined;
    }
    const tenant: TenantRef = {
      id: row.id,
      slug: row.slug,
      isOperator: row.is_operator,
      corsOrigins: row.cors_origins,
    };
    if (generation !== this.generation) return tenant;
    this.cache.set(host, tenant);
    let hosts = this.hostsByTenant.get(tenant.id);
    if (!hosts) this.hostsByTenant.set(tenant.id, (hosts = new Set()));
    hosts.add(host);
    return tenant;
  }

  evictTenant(tenantId: string): void {
    this.generation++;
    // A copy: each delete's dispose callback removes the host from the live set.
    for (const host of [...(this.hostsByTenant.get(tenantId) ?? [])]) this.cache.delete(host);
    this.hostsByTenant.delete(tenantId);
  }

  cachedHosts(): string[] {
    return [...this.cache.keys()];
  }

  /** How many hosts the cache holds now (at most its max). */
  get size(): number {
    return this.cache.size;
  }

  private unindex(tenantId: string, host: string): void {
    const hosts = this.hostsByTenant.get(tenantId);
    if (!hosts) return;
    hosts.delete(host);
    if (hosts.size === 0) this.hostsByTenant.delete(tenantId);
  }

  /** Takes evictions from every process, this one included, through the process's listener. */
  listen(listener: ChangeListener): void {
    listener.on(HOST_EVICTION_CHANNEL, (tenantId) => this.evictTenant(tenantId));
    // Evictions may have been missed while the connection was down: start again from nothing.
    listener.onLost(() => {
      this.generation++;
      this.cache.clear();
      this.hostsByTenant.clear();
    });
  }
}

/** SQL to run inside the transaction that suspends a tenant or changes its hosts. */
export const EVICT_TENANT_SQL = `select pg_notify('${HOST_EVICTION_CHANNEL}', $1::text)`;
