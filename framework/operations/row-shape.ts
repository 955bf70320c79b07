import type { TProperties, TSchema } from 'typebox';
import type { EntityRow } from '../entity/define.ts';
import type { ResolvedEntity } from '../entity/resolve.ts';

type Row = EntityRow<TProperties>;
type Values = Record<string, unknown>;

/** How an entity's rows look on either side: columns in PostgreSQL, fields in the API and events. */
export class RowShape {
  private readonly entity: ResolvedEntity;
  /** Column → field, the system columns first. */
  private readonly columnFields: [column: string, field: string][];

  constructor(entity: ResolvedEntity) {
    this.entity = entity;
    this.columnFields = [
      ['id', 'id'],
      ['created_at', 'createdAt'],
      ['updated_at', 'updatedAt'],
      ...entity.fields.map((f) => [entity.columns[f]!, f] as [string, string]),
    ];
  }

  toRow(values: Values): Row {
    const row: Values = {};
    // By the entity's columns, not the row's keys: no entries array per row, no map lookups.
    for (const [column, field] of this.columnFields) {
      const value = values[column];
      if (value !== undefined || column in values) row[field] = value;
    }
    return row as Row;
  }

  /** The lifecycle events' payload: the id, and the fields the entity lists in eventFields. */
  eventPayload(row: Row): Values {
    const payload: Values = { id: row.id };
    for (const field of this.entity.def.eventFields ?? []) payload[field] = (row as Values)[field];
    return payload;
  }

  /** A field's value as its column takes it: an object (or array of objects) as JSON text. */
  toColumnValue(field: string, value: unknown): unknown {
    const schema = this.entity.def.fields[field] as TSchema & { type?: string; items?: { type?: string } };
    const json = schema.type === 'object' || (schema.type === 'array' && schema.items?.type === 'object');
    return json && value !== null ? JSON.stringify(value) : value;
  }
}
