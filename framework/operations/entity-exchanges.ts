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
import type { QueryReference } from '../query/query-model.ts';
import { compileFilter, expansionColumn, expansionSelect } from '../query/compile.ts';
import { admitReferences } from '../query/expansion.ts';
import { isEmptyQuery, type ListQuery } from '../query/parse.ts';
import { StatementShapes, WRITE_SHAPES_PER_KIND } from './statement-shapes.ts';
import { uniqueFailure } from './unique-violation.ts';
import type { EntityHistory } from '../history/entity-history.ts';

type Row = EntityRow<TProperties>;

/** The fields every row has beside its declared ones, by column. */
const SYSTEM_COLUMNS: Readonly<Record<string, string>> = { id: 'id', createdAt: 'created_at', updatedAt: 'updated_at' };
type Values = Record<string, unknown>;

/** What the one-exchange builders need of an entity's operations. */
export interface ExchangeSource {
  readonly entity: ResolvedEntity;
  readonly pager: KeysetPager;
  readonly table: string;
  readonly selectList: string;
  /** The condition every live row meets (empty for a hard-deleting entity). */
  readonly live: string;
  /** Which references a statement may read through (decided at boot, exchangeKinds). */
  readonly exchangeKinds: ExchangeKinds;
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
  /**
   * The references a one-statement list or read may filter through and expand inside its
   * statement: those whose entity's rows need no caller (row access) and no code after the
   * statement (afterRead). A query naming another goes through the handler.
   */
  readonly references: ReadonlySet<string>;
}

/**
 * The entity's declarations decide, at boot, which generic operations a request may run as one
 * statement. Not a list or read whose rows need the caller before the statement (row access) or
 * code after it (afterRead). Not a create that runs code around the write (hooks), of a singleton,
 * whose body may name a state the declared initial states must check (command-states.ts), or whose
 * event carries a field the body may leave to the database or that PostgreSQL would print in its
 * own form (a date-time): the event is made from the body before the insert runs.
 */
export function exchangeKinds(
  entity: ResolvedEntity,
  references: ReadonlyMap<string, QueryReference> = new Map(),
): ExchangeKinds {
  const def = entity.def;
  // A gated entity's routes are judged on the plan before their statement; a limited create counts under its lock first.
  const rows = !def.rowAccess && !def.hooks?.afterRead && def.feature === undefined;
  const states = def.states;
  const bodyMayNameState = states?.initial !== undefined && entity.writable.includes(states.field);
  const bodyCarries = (field: string) =>
    entity.writable.includes(field) && !Type.IsOptional(def.fields[field]!) && !hasDateTimeFormat(def.fields[field]!);
  const create =
    !entity.singleton &&
    def.feature === undefined &&
    def.limit === undefined &&
    !def.hooks?.beforeWrite &&
    !def.hooks?.afterWrite &&
    !def.hooks?.afterRead &&
    !bodyMayNameState &&
    (def.eventFields ?? []).every(bodyCarries);
  const inStatement = [...references.values()].filter((r) => r.target.inStatement).map((r) => r.name);
  return { list: rows, read: rows, create, references: new Set(inStatement) };
}

/** Whether the statement can answer the query by itself: every reference it names may be read inside it. */
const answersInStatement = (query: ListQuery, kinds: ExchangeKinds): boolean =>
  query.references.every((r) => kinds.references.has(r.name));

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
  private readonly canReadSql: string;
  /** Read texts by the expansions they carry (none: the plain read). */
  private readonly readTexts = new Map<string, string>();
  private readonly insertShapes = new StatementShapes(WRITE_SHAPES_PER_KIND);

  constructor(source: ExchangeSource) {
    this.source = source;
    this.canReadSql = permissionPredicate(source.entity.def.permissions.read);
    this.canRead = { conditions: [], params: [], guard: this.canReadSql };
  }

  /**
   * The page as one statement, with the query's filters, sort and expansions in it. Undefined for a
   * search (q), which the handler's filter carries, and for a query naming a reference whose rows
   * the statement cannot read by itself (exchangeKinds): the handler serves those. Its cursors are
   * sealed for the place (the request's tenant).
   */
  list(page: PageQuery, place: ListPlace, query: ListQuery): OneExchange | undefined {
    if (page.q !== undefined || !answersInStatement(query, this.source.exchangeKinds)) return undefined;
    const { pager } = this.source;
    const filter = this.listFilter(query);
    const { text, params, walk } = pager.statement(page, filter, place);
    return {
      statement: { text, values: params },
      admit: (can) => admitReferences(query, can),
      answer: async (rows, more) => {
        return pager.answer(
          rows,
          page,
          walk,
          () =>
            more(async (ctx) => {
              const count = pager.countStatement(filter);
              return Number((await run<{ n: string }>(ctx.db, count.text, count.params))[0]!.n);
            }),
          (r) => this.row(r, query.expand),
        );
      },
      failed: (err) => pager.failure(err, walk),
    };
  }

  /**
   * A read by id as one statement, with the query's expansions in it; no row is 404 once the guard
   * has passed. Undefined for an id that is no UUID, and for an expansion the statement cannot
   * read by itself (the handler answers those, after the guard).
   */
  read(id: string, query: ListQuery): OneExchange | undefined {
    if (!isUuid(id) || !answersInStatement(query, this.source.exchangeKinds)) return undefined;
    return {
      statement: { text: this.readText(query.expand), values: [id] },
      admit: (can) => admitReferences(query, can),
      answer: async (rows) => {
        if (!rows[0]) throw notFound();
        return this.row(rows[0], query.expand);
      },
    };
  }

  /** The read permission and the query's conditions and expansions, as the pager takes them. */
  private listFilter(query: ListQuery): ListFilter {
    if (isEmptyQuery(query)) return this.canRead;
    const compiled = compileFilter(query, 1);
    return {
      ...this.canRead,
      conditions: compiled.conditions,
      params: compiled.params,
      ...(query.expand.length > 0 ? { columns: query.expand.map(expansionSelect) } : {}),
      ...this.projection(query),
      ...(compiled.conditions.length > 0 ? { varies: true, binding: JSON.stringify([[], [], query.written]) } : {}),
    };
  }

  /**
   * The select list of a page whose `fields=` keeps only some of the row's own fields: the id and
   * their columns, so the rest are neither read nor parsed. None when a kept name is no stored
   * column (the whole row is read, and fields= picks from it).
   */
  private projection(query: ListQuery): { select?: string } {
    const own = query.select?.own;
    if (!own) return {};
    const columns = ['id'];
    for (const name of own) {
      const column = SYSTEM_COLUMNS[name] ?? this.source.entity.columns[name];
      if (column === undefined) return {};
      if (!columns.includes(column)) columns.push(column);
    }
    return { select: columns.map(quote).join(', ') };
  }

  /** The read's text with these expansions: one per set of expanded references, built once. */
  private readText(expand: readonly QueryReference[]): string {
    const key = expand.map((r) => r.name).join(',');
    let text = this.readTexts.get(key);
    if (!text) {
      const { selectList, table, live } = this.source;
      const columns = expand.map((r) => `, ${expansionSelect(r)}`).join('');
      text = prepared(`select ${selectList}${columns} from ${table}${where('id = $1', live, this.canReadSql)}`);
      this.readTexts.set(key, text);
    }
    return text;
  }

  /** A row as the API shows it, with each expansion's row read from its JSON value (or null). */
  private row(values: Values, expand: readonly QueryReference[]): Row {
    const row = this.source.toRow(values);
    for (const reference of expand) {
      const value = values[expansionColumn(reference)];
      (row as Values)[reference.name] = value === null || value === undefined ? null : reference.target.fromJson(value);
    }
    return row;
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
