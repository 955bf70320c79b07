import type { PublicReadValidators } from '../contracts/services.ts';
import type { ChangeListener } from '../db/listener.ts';

export const PUBLIC_READ_CHANGE_CHANNEL = 'tenantry_public_read';

interface Entry {
  etag: string;
  at: number;
}

/**
 * The current ETag of publicly readable rows, per process, so that a conditional GET naming it is
 * answered 304 without the database. Only rows the public may see are held (an unknown or hidden
 * value always asks the database). Every write to such a table NOTIFYs on commit (trigger
 * `tenantry_public_read_changed`), and every process drops that tenant's entries of that table;
 * the TTL bounds staleness should a notification be lost.
 *
 * As in the host cache, a fill races an eviction: the lookup may read a row before a write commits
 * while the eviction arrives before the answer is stored. Every eviction bumps a generation
 * counter, and a fill whose lookup started under an older generation is not kept.
 */
export class PublicReadCache implements PublicReadValidators {
  /** table → tenant id → lookup value → entry (nested, so a lookup builds no key string). */
  private readonly tables = new Map<string, Map<string, Map<string, Entry>>>();
  private generation = 0;
  private size = 0;
  private readonly ttlMs: number;
  private readonly maxEntries: number;

  constructor(options: { ttlMs?: number; maxEntries?: number } = {}) {
    this.ttlMs = options.ttlMs ?? 60_000;
    this.maxEntries = options.maxEntries ?? 50_000;
  }

  /** The generation to hand back to `fill`: read it before the lookup starts. */
  current(): number {
    return this.generation;
  }

  etag(table: string, tenantId: string, value: string, now = Date.now()): string | undefined {
    const entry = this.tables.get(table)?.get(tenantId)?.get(value);
    return entry && now - entry.at < this.ttlMs ? entry.etag : undefined;
  }

  fill(table: string, tenantId: string, value: string, etag: string, generation: number, now = Date.now()): void {
    if (generation !== this.generation) return;
    if (this.size >= this.maxEntries) this.clear();
    let tenants = this.tables.get(table);
    if (!tenants) this.tables.set(table, (tenants = new Map()));
    let group = tenants.get(tenantId);
    if (!group) tenants.set(tenantId, (group = new Map()));
    if (!group.has(value)) this.size++;
    group.set(value, { etag, at: now });
  }

  /** Drops the tenant's entries of the table: a row of it was written. */
  evict(table: string, tenantId: string): void {
    this.generation++;
    const tenants = this.tables.get(table);
    const group = tenants?.get(tenantId);
    if (!group) return;
    this.size -= group.size;
    tenants!.delete(tenantId);
  }

  clear(): void {
    this.generation++;
    this.tables.clear();
    this.size = 0;
  }

  listen(listener: ChangeListener): void {
    // The trigger's payload: `<table> <tenant id>`.
    listener.on(PUBLIC_READ_CHANGE_CHANNEL, (payload) => {
      const [table = '', tenantId = ''] = payload.split(' ');
      this.evict(table, tenantId);
    });
    listener.onLost(() => this.clear());
  }
}
