import { prepared } from '../db/statements.ts';

/**
 * The texts of one kind of write whose statement varies with the fields a body names (an insert of
 * the fields present, an update of the fields changed): up to 2ⁿ texts for n fields. The first
 * `limit` texts seen run as prepared statements, parsed once per connection; any text after
 * them runs unnamed, parsed on each run. So a connection holds at most `limit` prepared
 * statements per kind of write, however many shapes the bodies take, and the usual few shapes
 * (a create with every field, the common edits) are the ones seen first and kept.
 *
 * No name is ever evicted and reused: pg refuses a name prepared on a connection for another text.
 */
export class StatementShapes {
  private readonly kept = new Set<string>();
  private readonly limit: number;

  constructor(limit: number) {
    this.limit = limit;
  }

  /** The text, registered as a prepared statement while the limit allows. */
  text(text: string): string {
    if (this.kept.has(text)) return text;
    if (this.kept.size < this.limit) {
      this.kept.add(text);
      prepared(text);
    }
    return text;
  }

  /** How many texts run prepared (for tests and the bench's report). */
  get size(): number {
    return this.kept.size;
  }
}

/** Prepared texts per entity per kind of write (insert, update, one-exchange insert). */
export const WRITE_SHAPES_PER_KIND = 8;
