import type { TxContext } from '../context/tx.ts';
import type { ResolvedEntity } from '../entity/resolve.ts';
import { problem } from '../errors.ts';
import { quote } from './entity-sql.ts';

type Values = Record<string, unknown>;

/** An entity's row-access condition for one call: SQL text and its values. */
export interface AccessFilter {
  sql: string;
  params: unknown[];
}

const NO_ACCESS_FILTER: AccessFilter = Object.freeze({ sql: '', params: [] as unknown[] }) as AccessFilter;

/**
 * The row-access condition (`"owner_id" = $n and ...`, numbered from `first`) and its values;
 * empty for an entity that declares no rowAccess. The text depends only on the fields the filter
 * names, so each statement keeps one text and stays prepared.
 */
export class RowAccess {
  private readonly entity: ResolvedEntity;
  private readonly toColumnValue: (field: string, value: unknown) => unknown;
  /** Conditions by "first parameter|fields": the same few texts on every request. */
  private readonly texts = new Map<string, string>();

  constructor(entity: ResolvedEntity, toColumnValue: (field: string, value: unknown) => unknown) {
    this.entity = entity;
    this.toColumnValue = toColumnValue;
  }

  filter(ctx: TxContext, first: number): AccessFilter {
    const rowAccess = this.entity.def.rowAccess;
    if (!rowAccess) return NO_ACCESS_FILTER;
    const filter = rowAccess(ctx) as Values;
    const fields = Object.keys(filter);
    const key = `${first}|${fields.join(',')}`;
    let sql = this.texts.get(key);
    if (sql === undefined) {
      for (const field of fields) {
        if (!(field in this.entity.columns))
          throw problem('INTERNAL', `rowAccess of ${this.entity.names.key} names ${field}, which is not a field`);
      }
      sql = fields.map((f, i) => `${quote(this.entity.columns[f]!)} = $${first + i}`).join(' and ');
      this.texts.set(key, sql);
    }
    return { sql, params: fields.map((f) => this.toColumnValue(f, filter[f])) };
  }
}
