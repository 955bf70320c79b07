import { needsInitialCheck } from './command-states.ts';
import type { TProperties } from 'typebox';
import type { ResolvedEntity } from '../entity/resolve.ts';
import type { EntityRow, OneExchange } from '../entity/define.ts';
import { permissionPredicate } from '../context/opening.ts';
import { prepared } from '../db/statements.ts';
import { uuidv7 } from '../db/uuidv7.ts';
import { hasDateTimeFormat } from '../entity/date-time.ts';
import { notFound } from '../errors.ts';
import { isUuid, quote, run, where } from './entity-sql.ts';
import type { KeysetPager, ListFilter, ListPlace, PageQuery } from './paging.ts';
import { StatementShapes, WRITE_SHAPES_PER_KIND } from './statement-shapes.ts';
import { uniqueFailure } from './unique-violation.ts';

type Row = EntityRow<TProperties>;
type Values = Record<string, unknown>;

/** What the one-exchange builders need of an entity's operations. */
export interface ExchangeSource {
  readonly entity: ResolvedEntity;
  readonly pager: KeysetPager;
  readonly table: string;
  readonly selectList: string;
  /** The condition every live row meets (empty for a hard-deleting entity). */
  readonly live: string;
  toRow(values: Values): Row;
  toColumnValue(field: string, value: unknown): unknown;
  eventPayload(row: Row): Values;
  /** Someone waits on this entity's committed writes (onCommittedWrite): only the handler tells them. */
  watchesWrites(): boolean;
}

/**
 * The generic list, read and create as one statement each, for a one-exchange request
 * (RouteDefinition.oneExchange). The framework sends each with the transaction's opening
 * statement and guard (TenantTransactions.runStatement): a caller without the route's permission
 * leaves the guard with a read-only transaction, so nothing built here can write for them. The
 * reads also carry the read permission in their WHERE, so that for such a caller they read no
 * row either (work saved, not the safety).
 */
export class EntityExchanges {
  private readonly source: ExchangeSource;
  /** The read permission as a list condition: the page requires it, the count runs only when it holds. */
  private readonly canRead: ListFilter;
  private readonly readText: string;
  private readonly insertShapes = new StatementShapes(WRITE_SHAPES_PER_KIND);

  constructor(source: ExchangeSource) {
    this.source = source;
    const canReadSql = permissionPredicate(source.entity.def.permissions.read);
    this.canRead = { conditions: [], params: [], guard: canReadSql };
    this.readText = prepared(
      `select ${source.selectList} from ${source.table}${where('id = $1', source.live, canReadSql)}`,
    );
  }

  /**
   * The page as one statement, its cursors sealed for the place (the request's tenant). Undefined
   * when the list needs the caller before its statement (row access) or runs code on its rows (afterRead).
   */
  list(page: PageQuery, place: ListPlace): OneExchange | undefined {
    const { entity, pager } = this.source;
    if (entity.def.rowAccess || entity.def.hooks?.afterRead) return undefined;
    const { text, params, walk } = pager.statement(page, this.canRead, place);
    return {
      statement: { text, values: params },
      answer: async (rows, more) => {
        return pager.answer(
          rows,
          page,
          walk,
          () =>
            more(async (ctx) => {
              const count = pager.countStatement(this.canRead);
              return Number((await run<{ n: string }>(ctx.db, count.text, count.params))[0]!.n);
            }),
          (r) => this.source.toRow(r),
        );
      },
      failed: (err) => pager.failure(err, walk),
    };
  }

  /**
   * A read by id as one statement; no row is 404 once the guard has passed. Undefined under row
   * access or afterRead, and for an id that is no UUID (the handler answers it, after the guard).
   */
  read(id: string): OneExchange | undefined {
    const { entity } = this.source;
    if (entity.def.rowAccess || entity.def.hooks?.afterRead || !isUuid(id)) return undefined;
    return {
      statement: { text: this.readText, values: [id] },
      answer: async (rows) => {
        if (!rows[0]) throw notFound();
        return this.source.toRow(rows[0]);
      },
    };
  }

  /**
   * A create as one statement: the row's id is made in the process (UUIDv7, stamped with `now`,
   * the service clock's reading), so the created event is known before the insert runs and its
   * outbox insert travels with it. Undefined when code must run around the write (hooks), for a
   * singleton, for an entity whose committed writes are watched, or when the event names a field
   * the body leaves to the database.
   */
  create(input: Values, now: Date, created: (row: Row) => unknown): OneExchange | undefined {
    const { entity } = this.source;
    const def = entity.def;
    if (entity.singleton || def.hooks?.beforeWrite || def.hooks?.afterWrite || def.hooks?.afterRead) return undefined;
    if (this.source.watchesWrites()) return undefined;
    // A state a create may not take is the handler's to refuse (command-states.ts).
    if (needsInitialCheck(entity, input)) return undefined;
    const values: Values = { ...input, id: uuidv7(now.getTime()) };
    const eventFields = def.eventFields ?? [];
    // The event carries the body's values: only where they are what the row stores (not a
    // database default, not a date-time PostgreSQL would print in its own form).
    if (eventFields.some((f) => values[f] === undefined || (f in def.fields && hasDateTimeFormat(def.fields[f]!))))
      return undefined;
    const fields = Object.keys(values).filter((f) => (f === 'id' || f in entity.columns) && values[f] !== undefined);
    const column = (f: string) => (f === 'id' ? 'id' : entity.columns[f]!);
    const text = `insert into ${this.source.table} (${fields.map((f) => quote(column(f))).join(', ')})
values (${fields.map((_, i) => `$${i + 1}`).join(', ')}) returning ${this.source.selectList}`;
    return {
      statement: {
        text: this.insertShapes.text(text),
        values: fields.map((f) => (f === 'id' ? values.id : this.source.toColumnValue(f, values[f]))),
      },
      events: [{ name: entity.names.events.created, payload: this.source.eventPayload(values as Row) }],
      answer: async (rows) => created(this.source.toRow(rows[0]!)),
      failed: (err) => uniqueFailure(entity, err),
    };
  }
}
