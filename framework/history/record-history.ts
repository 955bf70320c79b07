import type { TxContext } from '../context/tx.ts';
import type { ActorKind } from '../context/actor.ts';
import { prepared } from '../db/statements.ts';
import { run } from '../operations/entity-sql.ts';
import type { KeysetPager, ListFilter, Page } from '../operations/paging.ts';
import type { ListQuery } from '../query/parse.ts';
import { QueryList } from '../query/query-list.ts';
import type { EntityHistory } from './entity-history.ts';
import { ACTOR_FILTERS, RevisionSchema } from './history-schemas.ts';

/** A revision as the history route answers it. */
export interface RevisionItem {
  id: string;
  at: Date;
  actor: { kind: ActorKind; userId: string | null; name: string | null };
  operation: string;
  changes: { field: string; old: unknown; new: unknown }[];
}

/** A revision's stored row, as the pager reads it. */
interface RevisionRow {
  id: string;
  at: Date;
  actor_id: string | null;
  actor_kind: ActorKind;
  actor_name: string | null;
  operation: string;
  old_values: Record<string, unknown>;
  new_values: Record<string, unknown>;
}

/** What a revision's filters compare: its time, operation and actor (as the answer names them). */
const REVISION_COLUMNS = {
  at: 'r.at',
  operation: 'r.operation',
  'actor.kind': 'r.actor_kind',
  'actor.userId': 'r.actor_id',
  'actor.name': 'r.actor_name',
};

/** The condition on the record: its id, and that the caller may see it (row access), deleted or not. */
export interface RecordCondition {
  sql: string;
  params: unknown[];
}

/**
 * One entity's history on the read side: a record's revisions, newest first, paged and filtered
 * like every list (the query language's QueryList), read in one statement from the table's key
 * (tenant, row, id) (migrations/framework/0017_revisions_one_key.sql) whose WHERE also requires the
 * record to exist for the caller; and what a restore needs, the value each
 * field held right after a revision.
 */
export class RecordHistory {
  readonly history: EntityHistory;
  /** The record's revisions as a list of the query language: filters by time, actor and operation. */
  readonly list: QueryList;
  readonly pager: KeysetPager;
  private readonly valuesAfterText: string;

  constructor(history: EntityHistory) {
    this.history = history;
    const entity = `'${history.entity.names.key.replaceAll("'", "''")}'`;
    this.list = new QueryList({
      label: 'revisions',
      item: RevisionSchema,
      select: 'r.id, r.at, r.actor_id, r.actor_kind, r.actor_name, r.operation, r.old_values, r.new_values',
      from: 'revisions r',
      id: 'r.id',
      where: [`r.entity = ${entity}`],
      columns: REVISION_COLUMNS,
      schemas: ACTOR_FILTERS,
      // Revision ids are UUIDv7 made from the transaction's time: their order is the order in time,
      // and the key (tenant, row, id) serves it.
      orders: { at: 'r.id' },
      indexed: ['at'],
      defaultSort: '-at',
      sortDescription:
        '-at (the default): newest first; at: oldest first. Ties cannot happen in time order: a revision’s id orders it.',
    });
    this.pager = this.list.pager;
    // Per field: its value after the revision ($2) is the new value of the last revision up to it
    // that changed the field; failing that (a field a create left out, a revision since purged),
    // the old value of the first later revision that changed it. $1 the row, $3 the fields. The
    // revision itself must be the record's (the first column).
    this.valuesAfterText = prepared(`
select exists (select 1 from revisions where entity = ${entity} and row_id = $1 and id = $2) as found,
       (select coalesce(jsonb_object_agg(f.key, v.value), '{}') from unnest($3::text[]) f(key)
          cross join lateral (
            select coalesce(
                     (select jsonb_build_array(new_values -> f.key) from revisions
                       where entity = ${entity} and row_id = $1 and id <= $2 and new_values ? f.key
                       order by id desc limit 1),
                     (select jsonb_build_array(old_values -> f.key) from revisions
                       where entity = ${entity} and row_id = $1 and id > $2 and old_values ? f.key
                       order by id limit 1)) as value) v
         where v.value is not null) as "values"`);
  }

  /**
   * A page of the record's revisions as the query asks (paging, sort, filters: framework/query/);
   * `record` keeps it to the record the caller may see (its parameters numbered from 1; the row's
   * id is the statement's too). With the query as parsed, for the answer's field selection.
   */
  async page(
    ctx: TxContext,
    query: object,
    record: RecordCondition,
  ): Promise<{ page: Page<RevisionItem>; asked: ListQuery }> {
    const scope: ListFilter = { conditions: [record.sql], params: record.params };
    const { page, asked } = await this.list.page(ctx, query as Record<string, unknown>, scope);
    return { page: { ...page, items: page.items.map((r) => this.item(r as unknown as RevisionRow)) }, asked };
  }

  /**
   * The recorded fields' values right after the revision, each wrapped as [value] (a field no
   * revision tells is left out); undefined when the revision is not one of this record's.
   */
  async valuesAfter(ctx: TxContext, rowId: string, revisionId: string): Promise<Map<string, unknown> | undefined> {
    const rows = await run<{ found: boolean; values: Record<string, [unknown]> }>(ctx.db, this.valuesAfterText, [
      rowId,
      revisionId,
      this.history.plan.recorded,
    ]);
    const row = rows[0]!;
    if (!row.found) return undefined;
    return new Map(Object.entries(row.values).map(([field, [value]]) => [field, value]));
  }

  /**
   * A revision as the route answers it: its changes in the entity's field order, and only of
   * fields the read route shows (a field recorded once and since declared unrecorded, secret or
   * removed is never shown).
   */
  private item(row: RevisionRow): RevisionItem {
    const changes: RevisionItem['changes'] = [];
    for (const field of this.history.plan.recorded) {
      const inOld = Object.hasOwn(row.old_values, field);
      const inNew = Object.hasOwn(row.new_values, field);
      if (!inOld && !inNew) continue;
      changes.push({ field, old: inOld ? row.old_values[field] : null, new: inNew ? row.new_values[field] : null });
    }
    return {
      id: row.id,
      at: row.at,
      actor: { kind: row.actor_kind, userId: row.actor_id, name: row.actor_name },
      operation: row.operation,
      changes,
    };
  }
}
