import Type, { type TProperties } from 'typebox';
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
import type { EntityHistory } from '../history/entity-history.ts';

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
  /** Tells whoever waits on this entity's committed writes (onCommittedWrite) that the tenant's committed one. */
  committedWrite(tenantId: string): void;
  /** The entity's history, when it keeps one: the create's revision is written by the same statement. */
  readonly history: EntityHistory | undefined;
}

/** Which of the generic list, read and create may run as one statement: decided once, from the declarations. */
export interface ExchangeKinds {
  readonly list: boolean;
  readonly read: boolean;
  readonly create: boolean;
}

/**
 * The entity's declarations decide, at boot, which generic operations a request may run as one
 * statement. Not a list or read whose rows need the caller before the statement (row access) or
 * code after it (afterRead). Not a create that runs code around the write (hooks), of a singleton,
 * whose body may name a state the declared initial states must check (command-states.ts), or whose
 * event carries a field the body may leave to the database or that PostgreSQL would print in its
 * own form (a date-time): the event is made from the body before the insert runs.
 */
export function exchangeKinds(entity: ResolvedEntity): ExchangeKinds {
  const def = entity.def;
  const rows = !def.rowAccess && !def.hooks?.afterRead;
  const states = def.states;
  const bodyMayNameState = states?.initial !== undefined && entity.writable.includes(states.field);
  const bodyCarries = (field: string) =>
    entity.writable.includes(field) && !Type.IsOptional(def.fields[field]!) && !hasDateTimeFormat(def.fields[field]!);
  const create =
    !entity.singleton &&
    !def.hooks?.beforeWrite &&
    !def.hooks?.afterWrite &&
    !def.hooks?.afterRead &&
    !bodyMayNameState &&
    (def.eventFields ?? []).every(bodyCarries);
  return { list: rows, read: rows, create };
}

/**
 * The generic list, read and create as one statement each, for a one-exchange request
 * (RouteDefinition.oneExchange), on an entity whose declarations allow it (exchangeKinds). The framework sends each with the transaction's opening
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
   * for a search (q), which the handler's filter carries.
   */
  list(page: PageQuery, place: ListPlace): OneExchange | undefined {
    if (page.q !== undefined) return undefined;
    const { pager } = this.source;
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
   * A read by id as one statement; no row is 404 once the guard has passed. Undefined for an id
   * that is no UUID (the handler answers it, after the guard).
   */
  read(id: string): OneExchange | undefined {
    if (!isUuid(id)) return undefined;
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
   * outbox insert travels with it. Once it has committed, whoever waits on the entity's writes in
   * this process is told, as the handler's afterCommit tells them. An entity that keeps history
   * writes the create's revision in the same statement (EntityHistory.createStatementText).
   */
  create(input: Values, now: Date, tenantId: string, created: (row: Row) => unknown): OneExchange {
    const { entity, history } = this.source;
    const values: Values = { ...input, id: uuidv7(now.getTime()) };
    const fields = Object.keys(values).filter((f) => (f === 'id' || f in entity.columns) && values[f] !== undefined);
    const column = (f: string) => (f === 'id' ? 'id' : entity.columns[f]!);
    const insert = `insert into ${this.source.table} (${fields.map((f) => quote(column(f))).join(', ')})
values (${fields.map((_, i) => `$${i + 1}`).join(', ')}) returning ${this.source.selectList}`;
    const params = fields.map((f) => (f === 'id' ? values.id : this.source.toColumnValue(f, values[f])));
    return {
      statement: history
        ? {
            text: this.insertShapes.text(history.createStatementText(insert, params.length)),
            values: [...params, uuidv7(now.getTime()), now],
          }
        : { text: this.insertShapes.text(insert), values: params },
      events: [{ name: entity.names.events.created, payload: this.source.eventPayload(values as Row) }],
      answer: async (rows) => {
        this.source.committedWrite(tenantId);
        return created(this.source.toRow(rows[0]!));
      },
      failed: (err) => uniqueFailure(entity, err),
    };
  }
}
