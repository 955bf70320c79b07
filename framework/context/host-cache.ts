import type { Db } from '../db/pool.ts';
import type { ChangeListener } from '../db/listener.ts';
import type { TenantRef } from './tenant.ts';

export const HOST_EVICTION_CHANNEL = 'tenantry_hosts';

interface Entry {
  tenant: TenantRef;
  at: number;
}

/**
 * Host → tenant resolution with an in-process cache. Only served tenants are cached; an unknown
 * or suspended host costs one indexed query each time, so a new host or a lifted suspension needs
 * no invalidation. Suspension and host changes are broadcast with NOTIFY so every process drops the
 * tenant's entries at once; the TTL only bounds staleness should a notification be lost.
 *
 * A fill races an eviction: the host query may read the row before a suspension commits while the
 * eviction arrives before the answer is cached. Every eviction bumps a generation counter, and a
 * fill whose query started under an older generation is not cached (the request that asked is
 * still answered, as if it had arrived just before the eviction).
 */
export class HostResolver {
  private readonly cache = new Map<string, Entry>();
  /** Bumped on every eviction; evictions are rare, so one counter per process is enough. */
  private generation = 0;
  private readonly ttlMs: number;
  private readonly db: Db;

  constructor(db: Db, options: { ttlMs?: number } = {}) {
    this.db = db;
    this.ttlMs = options.ttlMs ?? 60_000;
  }

  /** The cached tenant of a served host, without waiting: undefined when resolve() must ask. */
  cached(host: string): TenantRef | undefined {
    const hit = this.cache.get(host);
    return hit && Date.now() - hit.at < this.ttlMs ? hit.tenant : undefined;
  }

  async resolve(host: string): Promise<TenantRef | undefined> {
    const hit = this.cached(host);
    if (hit) return hit;
    const generation = this.generation;
    const { rows } = await this.db.pool.query<{ id: string; slug: string; is_operator: boolean; status: string }>(
      `select t.id, t.slug, t.is_operator, t.status
         from tenant_hosts h join tenants t on t.id = h.tenant_id
        where h.host = $1`,
      [host],
    );
    const row = rows[0];
    if (row?.status !== 'active') {
      this.cache.delete(host);
      return undefined;
    }
    const tenant = { id: row.id, slug: row.slug, isOperator: row.is_operator };
    if (generation !== this.generation) return tenant;
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(host, { tenant, at: Date.now() });
    return tenant;
  }

  evictTenant(tenantId: string): void {
    this.generation++;
    for (const [host, entry] of this.cache) {
      if (entry.tenant.id === tenantId) this.cache.delete(host);
    }
  }

  cachedHosts(): string[] {
    return [...this.cache.keys()];
  }

  /** Takes evictions from every process, this one included, through the process's listener. */
  listen(listener: ChangeListener): void {
    listener.on(HOST_EVICTION_CHANNEL, (tenantId) => this.evictTenant(tenantId));
    listener.onLost(() => {
      this.generation++;
      this.cache.clear();
    });
  }
}

/** SQL to run inside the transaction that suspends a tenant or changes its hosts. */
export const EVICT_TENANT_SQL = `select pg_notify('${HOST_EVICTION_CHANNEL}', $1::text)`;
