import { LRUCache } from 'lru-cache';

/** Row serializers kept at most: far more than the `fields=` spellings a tenant's clients use. */
export const ROW_SERIALIZERS_KEPT = 256;

type Serialize = (row: unknown) => string;

/**
 * The streams' row serializers by list and `fields=` as written: streams that name the same fields
 * share one, and so one text per changed row (deliveries.ts). Bounded, least recently used first
 * out: `fields=` is the caller's text, and every new spelling of it (a name repeated, the names in
 * another order) would otherwise keep one more serializer for the life of the process. A stream
 * holds its own serializer, so one that falls out of here still works; a later stream with those
 * fields only gets a new one.
 */
export class RowSerializers {
  private readonly kept: LRUCache<string, Serialize>;

  constructor(max = ROW_SERIALIZERS_KEPT) {
    // maxSize with each entry weighing 1, as host-cache.ts: `max` would allocate the index up front.
    this.kept = new LRUCache<string, Serialize>({ maxSize: max, sizeCalculation: () => 1 });
  }

  /** The serializer of this list and `fields=`: the one kept, or `make()`'s, kept from now on. */
  of(list: string, fields: string, make: () => Serialize): Serialize {
    const key = `${list}|${fields}`;
    let serialize = this.kept.get(key);
    if (!serialize) {
      serialize = make();
      this.kept.set(key, serialize);
    }
    return serialize;
  }

  get size(): number {
    return this.kept.size;
  }
}
