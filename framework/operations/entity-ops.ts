import type { TProperties, TSchema } from 'typebox';
import { carryChange, publishedCount, type TxContext } from '../context/tx.ts';
import { followsEntity } from '../live/follows.ts';
import type { ResolvedEntity } from '../entity/resolve.ts';
import type { AfterWriteInput, EntityRow, OneExchange } from '../entity/define.ts';
import type { Services } from '../services.ts';
import type { EntityOperationsApi } from '../contracts/operations.ts';
import type { Config } from '../config/schema.ts';
import { notFound, problem } from '../errors.ts';
import { declaredDefault } from '../entity/storage.ts';
// Texts assembled from the entity's declaration alone: a small fixed set, each run prepared.
import { prepared as fixed } from '../db/statements.ts';
import { KeysetPager, type ListFilter, type ListPlace, type Page, type PageQuery } from './paging.ts';
import type { QueryModel, ReferenceTarget } from '../query/query-model.ts';
import { compileFilter, searchCondition } from '../query/compile.ts';
import { NO_QUERY, parseListQuery, type ListQuery } from '../query/parse.ts';
import { pageSchema } from './page-query.ts';
import { listQuerySchema, readQuerySchema, summaryQuerySchema } from '../query/query-schema.ts';
import {
  parseSummary,
  summaryAnswer,
  summaryAnswerSchema,
  summaryStatement,
  type SummaryAnswer,
} from '../query/summary.ts';
import { named } from '../openapi/schema-name.ts';
import { admitReferences, attachExpansions } from '../query/expansion.ts';
import {
  entityQueryFields,
  entityReferences,
  referenceTarget,
  rowWithExpansions,
  selectableNames,
} from './entity-query.ts';
import { isUuid, quote, run, sameValue, where } from './entity-sql.ts';
import { ValueCheck, type WriteSource } from './entity-checks.ts';
import { mappingUniqueViolations } from './unique-violation.ts';
import { EntityExchanges, exchangeKinds, type ExchangeKinds } from './entity-exchanges.ts';
import { RowAccess, type AccessFilter } from './row-access.ts';
import { RowShape } from './row-shape.ts';
import { checkInitialState, checkPatchMove, commandRefusal, verdictOf } from './command-states.ts';
import { StatementShapes, WRITE_SHAPES_PER_KIND } from './statement-shapes.ts';
import { EntityHistory, sameJson, type RevisionOperation } from '../history/entity-history.ts';
import { RecordHistory, type RecordCondition, type RevisionItem } from '../history/record-history.ts';
import { refuseNonActors, type Narrowing } from '../access/actors.ts';
import { admitLimit, keepWithinLimit, requireFeature } from '../entitlements/limits.ts';

export { isUuid } from './entity-sql.ts';

type Row = EntityRow<TProperties>;
type Values = Record<string, unknown>;

/**
 * The generic operations of one entity, with their SQL built once at boot. No HTTP here: each
 * takes the transaction context the caller opened. Row-level security scopes every statement to
 * the transaction's tenant (a global entity has none); the entity's row-access filter, when it
 * declares one, narrows every statement that finds rows; soft-deleted rows are invisible to all.
 *
 * A singleton entity is addressed with id null: the tenant's one row.
 */
export class EntityOperations implements EntityOperationsApi {
  readonly entity: ResolvedEntity;
  readonly table: string;
  readonly selectList: string;
  private readonly shape: RowShape;
  /** The condition every live row meets: not soft-deleted (empty: a hard-deleting entity keeps none). */
  readonly live: string;
  private readonly values: ValueCheck;
  private readonly rowAccess: RowAccess;
  /** The quoted columns a list's `q` searches (ResolvedEntity.searchable). */
  private readonly searchable: readonly string[];
  /** The installation's configuration, which beforeWrite hooks read. */
  private readonly config: Config;
  /**
   * What a query of its lists and reads may filter, sort, select and expand (framework/query/):
   * its references join once the registry has every entity (connect).
   */
  model: QueryModel;
  /** Pages of live rows; a row filter joins as a ListFilter (see framework/operations/paging.ts). */
  readonly pager: KeysetPager;
  /** The summary's query string and answer (framework/query/summary.ts), from the query model. */
  summaryQuery!: TSchema;
  summarySchema!: TSchema;
  /** Called once a transaction that wrote a row of this entity has committed, with its tenant. */
  private readonly writeWatchers: ((tenantId: string) => void)[] = [];
  /** The list, read and create as one statement each, for one-exchange requests. */
  private readonly exchanges: EntityExchanges;
  /**
   * Which of them the entity's declarations allow (entity-exchanges.ts): its routes take one
   * exchange only for these. Decided at boot, again once the references are known (connect).
   */
  exchangeKinds: ExchangeKinds;
  private target: ReferenceTarget | undefined;
  /** The row schema as resolved, before connect adds the expansions. */
  private readonly baseRow: TSchema;
  /** The insert and update texts, which vary with the fields written: a bounded number prepared. */
  private readonly insertShapes: StatementShapes;
  private readonly updateShapes: StatementShapes;
  /** The entity's history (framework/history/): what its writes record; undefined when it keeps none. */
  readonly history: EntityHistory | undefined;
  /** Its read side: a record's revisions and the values a restore sets. */
  readonly recordHistory: RecordHistory | undefined;

  /**
   * `config`: the installation's configuration, handed to beforeWrite hooks. `writeShapes`: how many
   * insert and update texts run prepared per connection (statement-shapes.ts).
   */
  constructor(entity: ResolvedEntity, options: { config: Config; writeShapes?: number }) {
    this.entity = entity;
    this.config = options.config;
    this.insertShapes = new StatementShapes(options.writeShapes ?? WRITE_SHAPES_PER_KIND);
    this.updateShapes = new StatementShapes(options.writeShapes ?? WRITE_SHAPES_PER_KIND);
    this.table = quote(entity.names.table);
    const cols = ['id', 'created_at', 'updated_at', ...entity.fields.map((f) => entity.columns[f]!)];
    this.selectList = cols.map(quote).join(', ');
    this.shape = new RowShape(entity);
    this.live = entity.deleteMode === 'hard' ? '' : 'deleted_at is null';
    this.values = new ValueCheck(entity);
    this.rowAccess = new RowAccess(entity, (field, value) => this.toColumnValue(field, value));
    this.baseRow = entity.schemas.row;
    const { fields, sorts } = entityQueryFields(entity);
    this.model = {
      label: entity.names.labelPlural.toLowerCase(),
      fields,
      sorts,
      references: new Map(),
      selectable: selectableNames(entity),
    };
    this.declareQuery();
    // A sortable name that is no field is the startup checks' to refuse, by name; not built here.
    const sortable = [...fields.values(), ...sorts.values()];
    this.pager = new KeysetPager({
      select: this.selectList,
      from: this.table,
      id: 'id',
      where: this.live ? [this.live] : [],
      sorts: Object.fromEntries(sortable.map((f) => [f.name, { column: f.order, nullable: f.type.nullable }])),
      // The capped count walks the (tenant_id, created_at, id) list index.
      countBy: 'createdAt',
    });
    this.searchable = entity.searchable
      .filter((f) => entity.columns[f] !== undefined)
      .map((f) => quote(entity.columns[f]!));
    this.history = EntityHistory.of(entity);
    this.recordHistory = this.history ? new RecordHistory(this.history) : undefined;
    this.exchanges = new EntityExchanges(this);
    this.exchangeKinds = exchangeKinds(entity);
  }

  /**
   * The conditions a list applies: row access, the search `q`, a narrowing of the framework's own,
   * the query's filters; undefined when there are none. Its references are admitted first (403).
   */
  private listFilter(
    ctx: TxContext,
    q: string | undefined,
    narrow: Narrowing | undefined,
    query: ListQuery,
  ): ListFilter | undefined {
    admitReferences(query, (permission) => ctx.can(permission));
    const access = this.access(ctx, 1);
    const conditions = access.sql ? [access.sql] : [];
    const params = [...access.params];
    if (q !== undefined && this.searchable.length > 0) {
      // One parameter for every searched column: strpos needs no escaping of % or _ in the text.
      params.push(q);
      conditions.push(searchCondition(this.searchable, params.length));
    }
    if (narrow) {
      // A condition of the framework's own (a picker's people who can act), after the caller's.
      const extra = narrow(params.length + 1);
      conditions.push(`(${extra.sql})`);
      params.push(...extra.params);
    }
    const compiled = compileFilter(query, params.length + 1, ctx);
    return compiled.conditions.length > 0
      ? {
          conditions: [...conditions, ...compiled.conditions],
          params: [...params, ...compiled.params],
          varies: true,
          binding: JSON.stringify([conditions, params, query.written]),
        }
      : conditions.length > 0
        ? { conditions, params }
        : undefined;
  }

  /**
   * A batch of the list's export written by PostgreSQL (framework/bulk/list-export/sql-lines.ts):
   * the rows the list would answer, after `after`, in its sort, each written by `line`, as one
   * text, and where the next batch starts. The same conditions as list(), so the same rows.
   */
  exportText(
    ctx: TxContext,
    page: { sort: string; q?: string | undefined; after?: string | undefined },
    query: ListQuery,
    line: string,
    size: number,
  ): Promise<{ text: string; next: string | null }> {
    const filter = this.listFilter(ctx, page.q, undefined, query) ?? { conditions: [], params: [] };
    return this.pager.textBatch(ctx, page, filter, line, size);
  }

  /**
   * A page of live rows the caller may see (row access joins the pager's conditions) in the sort
   * asked for, ties broken by id; `narrow` adds a condition of the framework's own. Reads the page from the (tenant_id, column, id) index, by keyset
   * after a cursor.
   */
  async list(ctx: TxContext, page: PageQuery, narrow?: Narrowing, query: ListQuery = NO_QUERY): Promise<Page<Row>> {
    const filter = this.listFilter(ctx, page.q, narrow, query);
    const result = await this.pager.page(ctx, page, filter);
    return { ...result, items: result.items.map((r) => this.toRow(r)) };
  }

  /**
   * Each row with the references the query expands, as their read routes answer this caller (or
   * null): one statement per expanded reference for the whole page, never one per row.
   */
  async expand(ctx: TxContext, rows: Values[], query: ListQuery): Promise<void> {
    for (const reference of query.expand) {
      const ids = rows.map((row) => row[reference.field]).filter((id): id is string => typeof id === 'string');
      const found = ids.length > 0 ? await reference.target.readMany(ctx, ids) : [];
      attachExpansions(rows, reference, found);
    }
  }

  /** The list as one statement for a one-exchange request (entity-exchanges.ts); undefined for the handler to serve it. */
  listExchange(page: PageQuery, place: ListPlace, query: ListQuery = NO_QUERY): OneExchange | undefined {
    return this.exchanges.list(page, place, query);
  }

  /** A read by id as one statement for a one-exchange request; undefined for the handler to serve it. */
  readExchange(id: string, query: ListQuery = NO_QUERY): OneExchange | undefined {
    return this.exchanges.read(id, query);
  }

  /**
   * Joins the references of the entity to the entities they name (`targetOf`, by key), once the
   * registry has resolved them all: from then on a query may filter through and expand them.
   */
  connect(targetOf: (key: string) => ReferenceTarget | undefined): void {
    const references = entityReferences(this.entity, this.table, targetOf);
    this.model = { ...this.model, references };
    this.exchangeKinds = exchangeKinds(this.entity, references);
    // A singleton has no list, and its read takes no query: its row stays as declared.
    if (references.size === 0 || this.entity.singleton) return;
    this.declareQuery();
    // The row as its list and read answer it: each reference may come expanded (expand=).
    const schemas = this.entity.schemas;
    schemas.row = rowWithExpansions(this.baseRow, references.values());
    schemas.list = pageSchema(schemas.row);
  }

  /** The list's and the read's query parameters, from the query model (framework/query/query-schema.ts). */
  private declareQuery(): void {
    const { schemas, searchable } = this.entity;
    schemas.listQuery = listQuerySchema(this.model, { defaultSort: 'createdAt', searches: searchable });
    schemas.readQuery = readQuerySchema(this.model);
    this.summaryQuery = summaryQuerySchema(this.model, { searches: searchable });
    this.summarySchema = summaryAnswerSchema(this.model);
  }

  /**
   * Counts (and sums, averages, minimums, maximums) of the live rows the caller may see that match
   * the list's filters, per group: one statement (framework/query/summary.ts), row access and the
   * filters as the list applies them.
   */
  async summary(ctx: TxContext, query: Record<string, unknown>): Promise<SummaryAnswer> {
    const { summary, filters } = parseSummary(this.model, query);
    const asked = this.parse(filters, ctx.now);
    admitReferences(asked, (permission) => ctx.can(permission));
    const access = this.access(ctx, 1);
    const conditions = [this.live, access.sql].filter((c) => c !== '');
    const params = [...access.params];
    const q = filters.q;
    if (typeof q === 'string' && q !== '' && this.searchable.length > 0) {
      params.push(q);
      conditions.push(searchCondition(this.searchable, params.length));
    }
    const compiled = compileFilter(asked, params.length + 1, ctx);
    const statement = summaryStatement(
      this.table,
      [...conditions, ...compiled.conditions],
      [...params, ...compiled.params],
      summary,
    );
    let rows: Values[];
    try {
      rows = await run<Values>(ctx.db, statement.text, statement.params);
    } catch (err) {
      // A zone Node's time zone database has and PostgreSQL's has not (22023): the request's, not ours.
      if ((err as { code?: unknown }).code === '22023' && /time zone/.test(String((err as Error).message))) {
        const message = `tz takes an IANA time zone the database knows; "${summary.tz}" is not one`;
        throw problem('VALIDATION_FAILED', message, { errors: [{ pointer: '/querystring/tz', message }] });
      }
      throw err;
    }
    return summaryAnswer(rows, summary);
  }

  /** The parameters of a list or read as a query of this entity (framework/query/parse.ts); 422 for what does not fit. */
  parse(query: unknown, now: Date): ListQuery {
    return parseListQuery(this.model, (query ?? {}) as Record<string, unknown>, now);
  }

  /** This entity as another's reference reaches it (framework/query/query-model.ts, ReferenceTarget). */
  asTarget(): ReferenceTarget {
    this.target ??= referenceTarget({
      entity: this.entity,
      table: this.table,
      live: this.live,
      model: this.model,
      readsInStatement: exchangeKinds(this.entity).read,
      // The row its read answers; under a name of its own where that entity expands references itself.
      row:
        Object.keys(this.entity.def.admin?.references ?? {}).length > 0
          ? named(this.baseRow, `${this.entity.names.schemas.read}Expanded`)
          : this.baseRow,
      toRow: (values) => this.toRow(values),
      accessFor: (ctx, first) => this.access(ctx, first),
      readMany: (ctx, ids) => this.readMany(ctx, ids),
    });
    return this.target;
  }

  /** A create as one statement for a one-exchange request in the tenant. */
  createExchange(input: Values, now: Date, tenantId: string, created: (row: Row) => unknown): OneExchange {
    return this.exchanges.create(input, now, tenantId, created);
  }

  /** The row by id, or a singleton's row (id null); 404 when there is none the caller may see. */
  async read(ctx: TxContext, id: string | null, options: { lock?: boolean } = {}): Promise<Row> {
    const row = await this.find(ctx, id, options.lock === true);
    if (!row) throw notFound();
    return row;
  }

  async create(ctx: TxContext, input: Values): Promise<Row> {
    checkInitialState(this.entity, input);
    const hooks = this.entity.def.hooks;
    const adjusted = hooks?.beforeWrite
      ? { ...input, ...((await hooks.beforeWrite(ctx, { op: 'create', values: input, config: this.config })) ?? {}) }
      : input;
    if (hooks?.beforeWrite) this.values.validate(adjusted, 'beforeWrite');
    // A gated entity's row needs its feature whoever creates it: a route's guard has judged its
    // caller already (the entitlements it resolved), an import's worker has none (they are read here).
    if (this.entity.def.feature !== undefined) await requireFeature(ctx, this.entity.def.feature);
    // A limited entity's row counts one unit: refused past the plan's limit, under the limit's lock.
    if (this.entity.def.limit !== undefined) await admitLimit(ctx, this.entity.def.limit, 1);
    const row = await this.afterWrite(ctx, { op: 'create', row: await this.insert(ctx, adjusted) });
    this.history?.record(ctx, row.id, 'create', { old: {}, new: this.history.snapshot(row) });
    return row;
  }

  /** PATCH: the changed fields of the row by id, or of a singleton's row (id null). */
  async update(ctx: TxContext, id: string | null, input: Values): Promise<Row> {
    return this.withinLimit(ctx, async () => {
      const previous = await this.read(ctx, id, { lock: true });
      return this.updateFrom(ctx, previous, input);
    });
  }

  /**
   * A write of a limited entity other than its create (a PATCH, a PUT, a restore, a command): it
   * may make a row count again (an endpoint back to active, a deleted user restored), so it is
   * refused, 403 PLAN_LIMIT_REACHED, when it took the tenant past the limit, measured by the
   * limit's own count under its lock, taken before the row's (PlanLimits.keepWithin).
   */
  private withinLimit<T>(ctx: TxContext, write: () => Promise<T>): Promise<T> {
    const limit = this.entity.def.limit;
    return limit === undefined ? write() : keepWithinLimit(ctx, limit, write);
  }

  /**
   * A singleton's PUT: creates the row from the body, or replaces every writable field of the
   * existing one (an optional field left out is cleared). An immutable field may be repeated, not changed.
   */
  async replace(ctx: TxContext, input: Values): Promise<{ row: Row; created: boolean }> {
    return this.withinLimit(ctx, () => this.replaceRow(ctx, input));
  }

  private async replaceRow(ctx: TxContext, input: Values): Promise<{ row: Row; created: boolean }> {
    const previous = await this.find(ctx, null, true);
    if (!previous) return { row: await this.create(ctx, input), created: true };
    const values: Values = {};
    // A field left out is cleared, or takes its column default (WithDefault) where it has one.
    for (const field of this.entity.writable)
      values[field] = input[field] ?? declaredDefault(this.entity.def.fields[field]!)?.value ?? null;
    for (const field of this.entity.immutable) {
      if (!sameValue((previous as Values)[field], values[field])) {
        throw problem('FIELD_IMMUTABLE', `${field} cannot be changed after creation`, { extensions: { field } });
      }
    }
    return { row: await this.updateFrom(ctx, previous, values), created: false };
  }

  /**
   * Runs fn after every committed write of this entity, in this process, before the request that
   * wrote answers (the public read's validator cache; other processes learn it by NOTIFY).
   */
  onCommittedWrite(fn: (tenantId: string) => void): void {
    this.writeWatchers.push(fn);
  }

  /** Tells the watchers (onCommittedWrite) that a write of the tenant has committed. */
  committedWrite(tenantId: string): void {
    for (const fn of this.writeWatchers) fn(tenantId);
  }

  private wrote(ctx: TxContext): void {
    if (this.writeWatchers.length === 0) return;
    const tenantId = ctx.tenant.id;
    ctx.afterCommit(() => this.committedWrite(tenantId));
  }

  /** DELETE, soft or hard as the entity declares, of the row by id or a singleton's row (id null). */
  async remove(ctx: TxContext, id: string | null): Promise<void> {
    const hooks = this.entity.def.hooks;
    let row: Row | undefined;
    if (hooks?.beforeDelete) {
      // The hook sees the row and may refuse: read and lock it first, then delete it by id.
      const target = await this.read(ctx, id, { lock: true });
      await hooks.beforeDelete(ctx, { row: target });
      row = this.toRow(
        (
          await run<Values>(ctx.db, fixed(`${this.deleteText()}${where('id = $1')} returning ${this.selectList}`), [
            target.id,
          ])
        )[0]!,
      );
    } else {
      // One statement finds and deletes the row.
      if (id !== null && !isUuid(id)) throw notFound();
      const access = this.access(ctx, id === null ? 1 : 2);
      const match = id === null ? where(this.live, access.sql) : where('id = $1', this.live, access.sql);
      const rows = await run<Values>(
        ctx.db,
        fixed(`${this.deleteText()}${match} returning ${this.selectList}`),
        id === null ? access.params : [id, ...access.params],
      );
      if (!rows[0]) throw notFound();
      row = this.toRow(rows[0]);
    }
    this.wrote(ctx);
    ctx.publish(this.entity.names.events.deleted, this.eventPayload(row));
    this.history?.record(ctx, row.id, 'delete', { old: {}, new: {} });
    const changes = await hooks?.afterWrite?.(ctx, { op: 'delete', row });
    if (changes && Object.keys(changes).length > 0) {
      throw problem('INTERNAL', `afterWrite of ${this.entity.names.key} returned changes for a deleted row`);
    }
  }

  /**
   * A command on the row by id, or on a singleton's row (id null): run gets the locked row, or
   * null when the singleton has none yet, and its returned values are inserted as the row.
   */
  runCommand(
    ctx: TxContext,
    id: string | null,
    command: string,
    body: unknown,
    services: Services,
    prepared?: unknown,
  ): Promise<Row> {
    return this.withinLimit(ctx, () => this.commandRun(ctx, id, command, body, services, prepared));
  }

  private async commandRun(
    ctx: TxContext,
    id: string | null,
    command: string,
    body: unknown,
    services: Services,
    prepared?: unknown,
  ): Promise<Row> {
    const definition = this.entity.def.commands?.[command];
    if (!definition) throw notFound();
    const previous =
      this.entity.singleton && id === null
        ? await this.find(ctx, null, true)
        : await this.read(ctx, id, { lock: true });
    // The declared state table first (command-states.ts): a refused state never reaches run.
    if (previous) {
      const verdict = verdictOf(this.entity, command, previous);
      if (verdict === 'refused') throw commandRefusal(this.entity, command, previous);
      if (verdict === 'unchanged') return previous;
    }
    // Then the people the body names, who must be able to act (access/actors.ts).
    await refuseNonActors(ctx, this.entity, definition.actors, body);
    const ownEvents = publishedCount(ctx);
    const changes = (await definition.run(ctx, previous ?? null, body as never, services, prepared)) as
      | Values
      | undefined;
    const source: WriteSource = { kind: 'command', command };
    if (!previous) {
      // Nothing to insert: the singleton still does not exist.
      if (!changes) throw notFound();
      this.values.validate(changes, source);
      const row = await this.afterWrite(ctx, { op: 'command', command, row: await this.insert(ctx, changes) });
      this.history?.record(ctx, row.id, command, { old: {}, new: this.history.snapshot(row) });
      return row;
    }
    if (!changes || Object.keys(changes).length === 0) return previous;
    this.values.validate(changes, source);
    const changed = this.changedFields(previous, changes);
    const written = await this.write(ctx, previous, changes, source);
    if (!written) return previous;
    this.carryCommandChange(ctx, ownEvents, written, changed);
    const row = await this.afterWrite(ctx, { op: 'command', command, row: written, previous });
    this.recordChange(ctx, previous, row, command);
    return row;
  }

  /**
   * A page of the record's revisions, newest first by default (the record by id, or a singleton's
   * row: id null), in one statement whose WHERE requires the record, live or soft-deleted, to be
   * one the caller may see. An empty page with no revision counted asks once more whether the record
   * exists: 404 if not, on every page.
   */
  async historyPage(
    ctx: TxContext,
    id: string | null,
    query: PageQuery & Record<string, unknown>,
  ): Promise<{ page: Page<RevisionItem>; asked: ListQuery }> {
    if (!this.recordHistory) throw notFound();
    if (id !== null && !isUuid(id)) throw notFound();
    const result = await this.recordHistory.page(ctx, query, this.historyCondition(ctx, id));
    // Any empty page, the first or one past the end (offset, after), of a record that is not there
    // for the caller is the one 404; a count above 0 already says the record is there.
    const { items, total } = result.page;
    if (items.length === 0 && total === 0 && !(await this.findAny(ctx, id, false))) throw notFound();
    return result;
  }

  /**
   * Sets the record's writable fields to their values right after the revision, through the PATCH
   * path (beforeWrite, the write, the updated event, afterWrite) with one revision whose operation
   * is `restore`; a soft-deleted record comes back to life. Command-owned, immutable and read-only
   * fields, and the state field, are left as they are, and named. Nothing to change: nothing is written or published.
   */
  restore(ctx: TxContext, id: string | null, revisionId: string): Promise<RestoreOutcome> {
    return this.withinLimit(ctx, () => this.restoreRow(ctx, id, revisionId));
  }

  private async restoreRow(ctx: TxContext, id: string | null, revisionId: string): Promise<RestoreOutcome> {
    const history = this.history;
    if (!this.recordHistory || !history) throw notFound();
    if (id !== null && !isUuid(id)) throw notFound();
    const found = await this.findAny(ctx, id, true);
    if (!found) throw notFound();
    const { row: current, deleted } = found;
    const after = isUuid(revisionId) ? await this.recordHistory.valuesAfter(ctx, current.id, revisionId) : undefined;
    if (!after) {
      throw problem('VALIDATION_FAILED', 'revision: not a revision of this record', {
        errors: [
          { pointer: '/body/revision', message: `not a revision of this ${this.entity.names.label.toLowerCase()}` },
        ],
      });
    }
    const changes: Values = {};
    const kept: RestoreOutcome['kept'] = [];
    for (const [field, value] of after) {
      if (sameJson(history.value((current as Values)[field]), value)) continue;
      const reason = keptReason(this.entity, field);
      if (reason) kept.push({ field, reason });
      else changes[field] = value;
    }
    if (Object.keys(changes).length === 0 && !deleted) return { row: current, restored: [], kept };
    this.values.validate(changes, { kind: 'restore' });
    const row = await this.updateFrom(ctx, current, changes, 'restore', deleted);
    const restored = Object.keys(changes).filter((f) => !sameValue((current as Values)[f], (row as Values)[f]));
    return { row, restored, kept };
  }

  /** The history's condition on the record: by id, or a singleton's rows; the caller's row access applied. */
  historyCondition(ctx: TxContext, id: string | null): RecordCondition {
    if (id === null) {
      const access = this.access(ctx, 1);
      return {
        sql: `r.row_id in (select id from ${this.table}${where(access.sql)})`,
        params: access.params,
      };
    }
    const access = this.access(ctx, 2);
    return {
      sql: `r.row_id = $1 and exists (select 1 from ${this.table}${where('id = $1', access.sql)})`,
      params: [id, ...access.params],
    };
  }

  /** The row by id (or a singleton's), soft-deleted or not, that the caller may see; with whether it is deleted. */
  private async findAny(
    ctx: TxContext,
    id: string | null,
    lock: boolean,
  ): Promise<{ row: Row; deleted: boolean } | undefined> {
    const deleted = this.live ? 'deleted_at is not null' : 'false';
    const suffix = lock ? ' for update' : '';
    const access = this.access(ctx, id === null ? 1 : 2);
    // A singleton's live row first, else its latest deleted one.
    const text =
      id === null
        ? fixed(
            `select ${this.selectList}, ${deleted} as "__deleted" from ${this.table}${where(access.sql)} order by ${deleted}, updated_at desc limit 1${suffix}`,
          )
        : fixed(
            `select ${this.selectList}, ${deleted} as "__deleted" from ${this.table}${where('id = $1', access.sql)}${suffix}`,
          );
    const rows = await run<Values>(ctx.db, text, id === null ? access.params : [id, ...access.params]);
    return rows[0] ? { row: this.toRow(rows[0]), deleted: rows[0].__deleted === true } : undefined;
  }

  /**
   * The live rows the caller may see among these ids, in one statement (ids that are no UUID, or
   * name no such row, are left out): how a page names the rows its own rows refer to, once per
   * page rather than once per row.
   */
  async readMany(ctx: TxContext, ids: readonly string[]): Promise<Row[]> {
    const wanted = [...new Set(ids.filter(isUuid))];
    if (wanted.length === 0) return [];
    const access = this.access(ctx, 2);
    const text = fixed(
      `select ${this.selectList} from ${this.table}${where('id = any($1::uuid[])', this.live, access.sql)}`,
    );
    return (await run<Values>(ctx.db, text, [wanted, ...access.params])).map((r) => this.toRow(r));
  }

  /** A row as the API shows it, from its columns (row-shape.ts). */
  toRow(values: Values): Row {
    return this.shape.toRow(values);
  }

  /** The row-access condition for this call, its parameters numbered from `first` (row-access.ts). */
  private access(ctx: TxContext, first: number): AccessFilter {
    return this.rowAccess.filter(ctx, first);
  }

  private async find(ctx: TxContext, id: string | null, lock: boolean): Promise<Row | undefined> {
    const suffix = lock ? ' for update' : '';
    if (id === null) {
      if (!this.entity.singleton) return undefined;
      const access = this.access(ctx, 1);
      // Row-level security leaves this tenant's rows, of which a unique index keeps one live.
      const text = fixed(`select ${this.selectList} from ${this.table}${where(this.live, access.sql)}${suffix}`);
      let rows = await run<Values>(ctx.db, text, access.params);
      if (!rows[0] && lock) {
        // No row to lock yet: whoever is about to create the tenant's one row takes turns on an
        // advisory lock, then looks again, so a concurrent second request finds the first one's
        // row (and answers as a serial repeat would) instead of colliding on the unique index.
        await run(ctx.db, fixed(SINGLETON_LOCK), [`singleton:${this.entity.names.table}:${ctx.tenant.id}`]);
        rows = await run<Values>(ctx.db, text, access.params);
      }
      return rows[0] ? this.toRow(rows[0]) : undefined;
    }
    if (!isUuid(id)) return undefined;
    const access = this.access(ctx, 2);
    const rows = await run<Values>(
      ctx.db,
      fixed(`select ${this.selectList} from ${this.table}${where('id = $1', this.live, access.sql)}${suffix}`),
      [id, ...access.params],
    );
    return rows[0] ? this.toRow(rows[0]) : undefined;
  }

  /**
   * PATCH (and PUT, and a restore) of a read and locked row: beforeWrite, the write of what differs,
   * the updated event, afterWrite and its changes, and one revision of everything that changed.
   * `revive`: the row was soft-deleted and comes back (a restore), even when no field differs.
   */
  private async updateFrom(
    ctx: TxContext,
    previous: Row,
    input: Values,
    operation: RevisionOperation = 'update',
    revive = false,
  ): Promise<Row> {
    const hooks = this.entity.def.hooks;
    // The state field moves only along the declared PATCH edges (a restore puts back what was).
    if (operation !== 'restore') checkPatchMove(this.entity, previous as Values, input);
    const adjusted = hooks?.beforeWrite
      ? {
          ...input,
          ...((await hooks.beforeWrite(ctx, {
            op: 'update',
            values: input,
            previous,
            revives: revive,
            config: this.config,
          })) ?? {}),
        }
      : input;
    if (hooks?.beforeWrite) this.values.validate(adjusted, 'beforeWrite');
    const written = await this.write(ctx, previous, adjusted, { kind: 'body' }, revive);
    if (!written) return previous;
    const row = await this.afterWrite(ctx, { op: 'update', row: written, previous });
    this.recordChange(ctx, previous, row, operation);
    return row;
  }

  /**
   * One revision of a write that changed the row (afterWrite's changes included): its recorded
   * fields' old and new values, none when only unrecorded fields changed.
   */
  private recordChange(ctx: TxContext, previous: Row, row: Row, operation: RevisionOperation): void {
    if (!this.history) return;
    this.history.record(ctx, row.id, operation, this.history.diff(previous, row) ?? { old: {}, new: {} });
  }

  private async insert(ctx: TxContext, values: Values): Promise<Row> {
    const fields = Object.keys(values).filter((f) => f in this.entity.columns && values[f] !== undefined);
    const text = fields.length
      ? `insert into ${this.table} (${fields.map((f) => quote(this.entity.columns[f]!)).join(', ')})
         values (${fields.map((_, i) => `$${i + 1}`).join(', ')}) returning ${this.selectList}`
      : `insert into ${this.table} default values returning ${this.selectList}`;
    const rows = await mappingUniqueViolations(
      this.entity,
      run<Values>(
        ctx.db,
        this.insertShapes.text(text),
        fields.map((f) => this.toColumnValue(f, values[f])),
      ),
    );
    const row = this.toRow(rows[0]!);
    this.wrote(ctx);
    ctx.publish(this.entity.names.events.created, this.eventPayload(row));
    return row;
  }

  /**
   * Writes the fields that differ from the stored row; nothing differs, nothing is written or
   * published (undefined). A PATCH and afterWrite's changes publish the updated event; a command
   * publishes its own, more specific one (task.assigned).
   */
  private async write(
    ctx: TxContext,
    previous: Row,
    changes: Values,
    source: WriteSource,
    revive = false,
  ): Promise<Row | undefined> {
    const changed = Object.keys(changes).filter(
      (f) => f in this.entity.columns && changes[f] !== undefined && !sameValue((previous as Values)[f], changes[f]),
    );
    if (changed.length === 0 && !revive) return undefined;
    const assignments = [
      ...changed.map((f, i) => `${quote(this.entity.columns[f]!)} = $${i + 2}`),
      // A restored soft-deleted row is live again: its unique keys are checked anew.
      ...(revive ? ['deleted_at = null'] : []),
    ].join(', ');
    const rows = await mappingUniqueViolations(
      this.entity,
      run<Values>(
        ctx.db,
        this.updateShapes.text(
          `update ${this.table} set ${assignments}, updated_at = now() where id = $1 returning ${this.selectList}`,
        ),
        [previous.id, ...changed.map((f) => this.toColumnValue(f, changes[f]))],
      ),
    );
    const row = this.toRow(rows[0]!);
    this.wrote(ctx);
    if (source.kind !== 'command')
      ctx.publish(this.entity.names.events.updated, { ...this.eventPayload(row), changed });
    return row;
  }

  /**
   * A command publishes its own events (task.assigned), not the entity's updated one: the last of
   * them carries the changed row to the entity's streams (framework/live). A command that changed
   * the row and published nothing of its own publishes the updated event, whatever the entity (a
   * singleton's, a global one's too), so no change escapes the outbox, the audit trail and the
   * webhooks.
   */
  private carryCommandChange(ctx: TxContext, since: number, row: Row, changed: string[]): void {
    const ownPublished = publishedCount(ctx) > since;
    if (ownPublished) {
      if (followsEntity(this.entity)) carryChange(ctx, since, { entity: this.entity.names.key, id: row.id });
      return;
    }
    ctx.publish(this.entity.names.events.updated, { ...this.eventPayload(row), changed });
  }

  /** The fields of `changes` that differ from the stored row: what a write stores. */
  private changedFields(previous: Row, changes: Values): string[] {
    return Object.keys(changes).filter(
      (f) => f in this.entity.columns && changes[f] !== undefined && !sameValue((previous as Values)[f], changes[f]),
    );
  }

  /**
   * Runs afterWrite and stores the changes it returns, through the same checks and write as a
   * command's. Storing them does not call afterWrite again, so a hook cannot recurse.
   */
  private async afterWrite(ctx: TxContext, input: AfterWriteInput<TProperties>): Promise<Row> {
    const hook = this.entity.def.hooks?.afterWrite;
    if (!hook) return input.row;
    const changes = (await hook(ctx, input)) as Values | undefined;
    if (!changes || Object.keys(changes).length === 0) return input.row;
    this.values.validate(changes, { kind: 'hook' });
    return (await this.write(ctx, input.row, changes, { kind: 'hook' })) ?? input.row;
  }

  /** The lifecycle events' payload (row-shape.ts). */
  eventPayload(row: Row): Values {
    return this.shape.eventPayload(row);
  }

  private deleteText(): string {
    return this.entity.deleteMode === 'hard'
      ? `delete from ${this.table}`
      : `update ${this.table} set deleted_at = now(), updated_at = now()`;
  }

  /** A field's value as its column takes it (row-shape.ts). */
  toColumnValue(field: string, value: unknown): unknown {
    return this.shape.toColumnValue(field, value);
  }
}

/** What a restore did: the row after it, the fields it set, and those it left as they are (and why). */
export interface RestoreOutcome {
  row: Row;
  restored: string[];
  kept: { field: string; reason: KeptReason }[];
}

/**
 * Why a restore leaves a field as it is: only its command writes it, it is set on create only,
 * only the service sets it, or it is the entity's state field, which moves only as its declared
 * moves allow (a restore never walks a state back). Undefined: the restore sets it.
 */
export type KeptReason = 'command-owned' | 'immutable' | 'read-only' | 'state';

function keptReason(entity: ResolvedEntity, field: string): KeptReason | undefined {
  if (field in entity.commandOwners) return 'command-owned';
  if (entity.immutable.includes(field)) return 'immutable';
  if (entity.readOnly.includes(field) || !entity.writable.includes(field)) return 'read-only';
  if (entity.def.states?.field === field) return 'state';
  return undefined;
}

/** Held until the transaction ends; keyed by the singleton's table and the tenant. */
const SINGLETON_LOCK = 'select pg_advisory_xact_lock(hashtextextended($1, 0))';
