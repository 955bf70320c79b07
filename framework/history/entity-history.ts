import type { TProperties } from 'typebox';
import type { TxContext } from '../context/tx.ts';
import { ACTOR_SETTING } from '../context/opening.ts';
import type { ResolvedEntity } from '../entity/resolve.ts';
import type { EntityRow } from '../entity/define.ts';
import { hasDateTimeFormat } from '../entity/date-time.ts';
import { uuidv7 } from '../db/uuidv7.ts';
import { quote } from '../operations/entity-sql.ts';
import { historyPlan, type HistoryPlan } from './history-plan.ts';
import { recordRevision } from './revisions.ts';

type Row = EntityRow<TProperties>;
type Values = Record<string, unknown>;

/** The operation a revision records: create, update, delete, restore, or a command's name. */
export type RevisionOperation = string;

/** A revision's changed fields: their values before (empty for a create) and after. */
export interface RevisionValues {
  old: Values;
  new: Values;
}

/**
 * An entity's history on the write side: which fields it records, their values as the API shows
 * them (a date-time as an ISO string), what a write changed, and the revision it records in the
 * transaction (framework/history/revisions.ts, inserted with the COMMIT). Built once per entity at
 * boot; undefined for an entity that keeps no history.
 */
export class EntityHistory {
  readonly entity: ResolvedEntity;
  readonly plan: HistoryPlan;
  /** The create's new values as PostgreSQL builds them from the inserted row `c`: made once, at boot. */
  private readonly createdValues: string;

  private constructor(entity: ResolvedEntity, plan: HistoryPlan) {
    this.entity = entity;
    this.plan = plan;
    const dateTimes = new Set(plan.recorded.filter((f) => hasDateTimeFormat(entity.def.fields[f]!)));
    const pairs = plan.recorded.map((field) => {
      const column = `c.${quote(entity.columns[field]!)}`;
      const value = dateTimes.has(field)
        ? `to_jsonb(to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`
        : `to_jsonb(${column})`;
      return `${literal(field)}, ${value}`;
    });
    // jsonb_build_object takes at most 100 arguments: 50 fields a call, joined.
    const chunks: string[] = [];
    for (let i = 0; i < pairs.length; i += 50) chunks.push(`jsonb_build_object(${pairs.slice(i, i + 50).join(', ')})`);
    this.createdValues = chunks.length > 0 ? chunks.join(' || ') : `'{}'::jsonb`;
  }

  static of(entity: ResolvedEntity): EntityHistory | undefined {
    const plan = historyPlan(entity);
    return plan ? new EntityHistory(entity, plan) : undefined;
  }

  /** A field's value as a revision keeps it: what the API answers for it (a Date as its ISO string). */
  value(value: unknown): unknown {
    if (value instanceof Date) return value.toISOString();
    return value === undefined ? null : value;
  }

  /** Every recorded field of a row: a create's new values. */
  snapshot(row: Row): Values {
    const values: Values = {};
    for (const field of this.plan.recorded) values[field] = this.value((row as Values)[field]);
    return values;
  }

  /** The recorded fields that differ between two states of a row; undefined when none does. */
  diff(before: Row, after: Row): RevisionValues | undefined {
    const old: Values = {};
    const now: Values = {};
    let changed = false;
    for (const field of this.plan.recorded) {
      const a = this.value((before as Values)[field]);
      const b = this.value((after as Values)[field]);
      if (sameJson(a, b)) continue;
      old[field] = a;
      now[field] = b;
      changed = true;
    }
    return changed ? { old, new: now } : undefined;
  }

  /** Records the revision in the transaction, to be inserted with its COMMIT. */
  record(ctx: TxContext, rowId: string, operation: RevisionOperation, values: RevisionValues): void {
    recordRevision(ctx.db, {
      id: uuidv7(ctx.now.getTime()),
      entity: this.entity.names.key,
      rowId,
      at: ctx.now,
      actor: ctx.actor,
      operation,
      old: values.old,
      new: values.new,
      tenantId: ctx.tenant.id,
    });
  }

  /**
   * The one-exchange create (operations/entity-exchanges.ts) with its revision: the insert and the
   * revision's insert as one statement, the revision's values read from the inserted row by
   * PostgreSQL in the same form the handler's path records (a date-time as the ISO string
   * JavaScript prints), its actor the caller the opening statement left in app.actor_id. Two
   * parameters follow the insert's: the revision's id and time. The new values' expression is
   * made at boot; a request only puts the texts together.
   */
  createStatementText(insertText: string, parameters: number): string {
    const values = this.createdValues;
    const actor = `nullif(current_setting('${ACTOR_SETTING}', true), '')`;
    return `with created as (${insertText}),
revision as (
  insert into revisions (id, entity, row_id, at, actor_id, actor_kind, operation, new_values)
  select $${parameters + 1}::uuid, ${literal(this.entity.names.key)}, c.id, $${parameters + 2}::timestamptz,
         ${actor}::uuid, case when ${actor} is null then 'system' else 'user' end, 'create', ${values}
    from created c)
select * from created`;
  }
}

const literal = (value: string) => `'${value.replaceAll("'", "''")}'`;

export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  return JSON.stringify(a) === JSON.stringify(b);
}
