import { CompiledQuery, type Transaction } from 'kysely';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import type { Database } from '../db/types.ts';
import { permissionPredicate, type TxContext } from '../context/tx.ts';
import type { ResolvedEntity } from '../entity/resolve.ts';
import type { AfterWriteInput, EntityRow, OneExchange } from '../entity/define.ts';
import type { TProperties } from 'typebox';
import type { Services } from '../services.ts';
import { notFound, problem, type FieldError } from '../errors.ts';
import { prepared } from '../db/statements.ts';
import { uuidv7 } from '../db/uuidv7.ts';
import { hasDateTimeFormat } from '../entity/date-time.ts';
import { KeysetPager, type ListFilter, type Page, type PageQuery } from './paging.ts';
import Type from 'typebox';

type Row = EntityRow<TProperties>;
type Values = Record<string, unknown>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (value: string): boolean => UUID.test(value);

const quote = (identifier: string): string => `"${identifier.replaceAll('"', '""')}"`;

/** Where the values being written came from: a request body (after beforeWrite), a command, or afterWrite. */
type Source = { kind: 'body' } | { kind: 'command'; command: string } | { kind: 'hook' };

/**
 * The generic operations of one entity, with their SQL built once at boot. No HTTP here: each
 * takes the transaction context the caller opened. Row-level security scopes every statement to
 * the transaction's tenant (a global entity has none); the entity's row-access filter, when it
 * declares one, narrows every statement that finds rows; soft-deleted rows are invisible to all.
 *
 * A singleton entity is addressed with id null: the tenant's one row.
 */
export class EntityOperations {
  readonly entity: ResolvedEntity;
  private readonly table: string;
  private readonly selectList: string;
  private readonly fromColumn: Map<string, string>;
  private readonly columnFields: [column: string, field: string][];
  /** The condition every live row meets: not soft-deleted (empty: a hard-deleting entity keeps none). */
  private readonly live: string;
  private readonly checkChanges: ReturnType<typeof Compile>;
  /** Row-access conditions by "first parameter|fields": the same few texts on every request. */
  private readonly accessTexts = new Map<string, string>();
  /** Pages of live rows; a row filter joins as a ListFilter (see framework/operations/paging.ts). */
  readonly pager: KeysetPager;
  /** Called once a transaction that wrote a row of this entity has committed, with its tenant. */
  private readonly committedWrite: ((tenantId: string) => void)[] = [];
  /** The read permission as a list condition, for statements sent before the caller is known. */
  private readonly canRead: ListFilter;
  private readonly canReadSql: string;
  /** The one-exchange read by id (readExchange). */
  private readonly readText: string;
  private readonly canWrite: string;

  constructor(entity: ResolvedEntity) {
    this.entity = entity;
    this.table = quote(entity.names.table);
    const cols = ['id', 'created_at', 'updated_at', ...entity.fields.map((f) => entity.columns[f]!)];
    this.selectList = cols.map(quote).join(', ');
    this.fromColumn = new Map<string, string>([
      ['id', 'id'],
      ['created_at', 'createdAt'],
      ['updated_at', 'updatedAt'],
      ...entity.fields.map((f) => [entity.columns[f]!, f] as [string, string]),
    ]);
    this.columnFields = [...this.fromColumn];
    this.live = entity.deleteMode === 'hard' ? '' : 'deleted_at is null';
    this.checkChanges = Compile(entity.schemas.changes);
    this.canReadSql = permissionPredicate(entity.def.permissions.read);
    this.canRead = { conditions: [], params: [], guard: this.canReadSql };
    this.readText = prepared(`select ${this.selectList} from ${this.table}${where('id = $1', this.live, this.canReadSql)}`);
    this.canWrite = permissionPredicate(entity.def.permissions.write);
    const columnOf = (field: string) => (field === 'createdAt' ? 'created_at' : field === 'updatedAt' ? 'updated_at' : entity.columns[field]);
    this.pager = new KeysetPager({
      select: this.selectList,
      from: this.table,
      id: 'id',
      where: this.live ? [this.live] : [],
      // A sortable name that is no field is the startup checks' to refuse, by name; not built here.
      sorts: Object.fromEntries(
        entity.sortable
          .filter((f) => columnOf(f) !== undefined)
          .map((f) => [f, { column: quote(columnOf(f)!), nullable: f in entity.def.fields && Type.IsOptional(entity.def.fields[f]!) }]),
      ),
    });
  }

  /**
   * A page of live rows the caller may see (row access joins the pager's conditions) in the sort
   * asked for, ties broken by id. Reads the page from the (tenant_id, column, id) index, by keyset
   * after a cursor.
   */
  async list(ctx: TxContext, page: PageQuery): Promise<Page<Row>> {
    const access = this.access(ctx, 1);
    const filter: ListFilter | undefined = access.sql ? { conditions: [access.sql], params: access.params } : undefined;
    const result = await this.pager.page(ctx.db, page, filter);
    return { ...result, items: result.items.map((r) => this.toRow(r)) };
  }

  /**
   * The list as one statement for a one-exchange request (RouteDefinition.oneExchange): the same
   * page, with the read permission checked in its WHERE, so a caller without it reads no row.
   * Undefined when the list needs the caller before its statement (row access) or runs code on
   * its rows (afterRead).
   */
  listExchange(page: PageQuery): OneExchange | undefined {
    if (this.entity.def.rowAccess || this.entity.def.hooks?.afterRead) return undefined;
    const { text, params, cursor } = this.pager.statement(page, this.canRead);
    return {
      statement: { text, values: params },
      answer: async (rows, more) => {
        return this.pager.answer(
          rows,
          page,
          cursor,
          () =>
            more(async (ctx) => {
              const count = this.pager.countStatement(this.canRead);
              return Number((await run<{ n: string }>(ctx.db, count.text, count.params))[0]!.n);
            }),
          (r) => this.toRow(r),
        );
      },
      failed: (err) => this.pager.failure(err, cursor),
    };
  }

  /**
   * A read by id as one statement for a one-exchange request, checking the read permission in its
   * WHERE; no row is 404 once the guard has passed. Undefined under row access or afterRead, and
   * for an id that is no UUID (the handler answers it, after the guard).
   */
  readExchange(id: string): OneExchange | undefined {
    if (this.entity.def.rowAccess || this.entity.def.hooks?.afterRead || !isUuid(id)) return undefined;
    return {
      statement: { text: this.readText, values: [id] },
      answer: async (rows) => {
        if (!rows[0]) throw notFound();
        return this.toRow(rows[0]);
      },
    };
  }

  /**
   * A create as one statement for a one-exchange request: the row's id is made in the process
   * (UUIDv7, stamped with `now`, the service clock's reading), so the created event is known
   * before the insert runs and its outbox insert travels with it. The insert and the outbox
   * insert check the write permission themselves. Undefined when code must run around the write
   * (hooks), for a singleton, for an entity whose committed writes are watched, or when the event names a field the body leaves to the database.
   */
  createExchange(input: Values, now: Date, created: (row: Row) => unknown): OneExchange | undefined {
    const def = this.entity.def;
    if (this.entity.singleton || def.hooks?.beforeWrite || def.hooks?.afterWrite || def.hooks?.afterRead) return undefined;
    // Whoever waits on this entity's committed writes (onCommittedWrite) is told by create().
    if (this.committedWrite.length > 0) return undefined;
    const values: Values = { ...input, id: uuidv7(now.getTime()) };
    const eventFields = def.eventFields ?? [];
    // The event carries the body's values: only where they are what the row stores (not a
    // database default, not a date-time PostgreSQL would print in its own form).
    if (eventFields.some((f) => values[f] === undefined || (f in def.fields && hasDateTimeFormat(def.fields[f]!)))) return undefined;
    const fields = Object.keys(values).filter((f) => (f === 'id' || f in this.entity.columns) && values[f] !== undefined);
    const column = (f: string) => (f === 'id' ? 'id' : this.entity.columns[f]!);
    const text = `insert into ${this.table} (${fields.map((f) => quote(column(f))).join(', ')})
select ${fields.map((_, i) => `$${i + 1}`).join(', ')} where ${this.canWrite} returning ${this.selectList}`;
    return {
      statement: { text: prepared(text), values: fields.map((f) => (f === 'id' ? values.id : this.toColumnValue(f, values[f]))) },
      events: [{ name: this.entity.names.events.created, payload: this.eventPayload(values as Row) }],
      answer: async (rows) => created(this.toRow(rows[0]!)),
      failed: (err) => this.uniqueFailure(err),
    };
  }

  /** The row by id, or a singleton's row (id null); 404 when there is none the caller may see. */
  async read(ctx: TxContext, id: string | null, options: { lock?: boolean } = {}): Promise<Row> {
    const row = await this.find(ctx, id, options.lock === true);
    if (!row) throw notFound();
    return row;
  }

  async create(ctx: TxContext, input: Values): Promise<Row> {
    const hooks = this.entity.def.hooks;
    const adjusted = hooks?.beforeWrite ? { ...input, ...((await hooks.beforeWrite(ctx, { op: 'create', values: input })) ?? {}) } : input;
    if (hooks?.beforeWrite) this.validate(adjusted, 'beforeWrite');
    const row = await this.insert(ctx, adjusted);
    return this.afterWrite(ctx, { op: 'create', row });
  }

  /** PATCH: the changed fields of the row by id, or of a singleton's row (id null). */
  async update(ctx: TxContext, id: string | null, input: Values): Promise<Row> {
    const previous = await this.read(ctx, id, { lock: true });
    return this.updateFrom(ctx, previous, input);
  }

  /**
   * A singleton's PUT: creates the row from the body, or replaces every writable field of the
   * existing one (an optional field left out is cleared). An immutable field may be repeated, not changed.
   */
  async replace(ctx: TxContext, input: Values): Promise<{ row: Row; created: boolean }> {
    const previous = await this.find(ctx, null, true);
    if (!previous) return { row: await this.create(ctx, input), created: true };
    const values: Values = {};
    for (const field of this.entity.writable) values[field] = input[field] ?? null;
    for (const field of this.entity.immutable) {
      if (!sameValue((previous as Values)[field], values[field])) {
        throw problem('FIELD_IMMUTABLE', `${field} cannot be changed after creation`, { extensions: { field } });
      }
    }
    return { row: await this.updateFrom(ctx, previous, values), created: false };
  }

  /** DELETE, soft or hard as the entity declares, of the row by id or a singleton's row (id null). */
  /**
   * Runs fn after every committed write of this entity, in this process, before the request that
   * wrote answers (the public read's validator cache; other processes learn it by NOTIFY).
   */
  onCommittedWrite(fn: (tenantId: string) => void): void {
    this.committedWrite.push(fn);
  }

  private wrote(ctx: TxContext): void {
    if (this.committedWrite.length === 0) return;
    const tenantId = ctx.tenant.id;
    ctx.afterCommit(() => {
      for (const fn of this.committedWrite) fn(tenantId);
    });
  }

  async remove(ctx: TxContext, id: string | null): Promise<void> {
    const hooks = this.entity.def.hooks;
    let row: Row | undefined;
    if (hooks?.beforeDelete) {
      // The hook sees the row and may refuse: read and lock it first, then delete it by id.
      const target = await this.read(ctx, id, { lock: true });
      await hooks.beforeDelete(ctx, { row: target });
      row = this.toRow((await run<Values>(ctx.db, `${this.deleteText()}${where('id = $1')} returning ${this.selectList}`, [target.id]))[0]!);
    } else {
      // One statement finds and deletes the row.
      if (id !== null && !isUuid(id)) throw notFound();
      const access = this.access(ctx, id === null ? 1 : 2);
      const match = id === null ? where(this.live, access.sql) : where('id = $1', this.live, access.sql);
      const rows = await run<Values>(ctx.db, `${this.deleteText()}${match} returning ${this.selectList}`, id === null ? access.params : [id, ...access.params]);
      if (!rows[0]) throw notFound();
      row = this.toRow(rows[0]);
    }
    this.wrote(ctx);
    ctx.publish(this.entity.names.events.deleted, this.eventPayload(row));
    const changes = await hooks?.afterWrite?.(ctx, { op: 'delete', row });
    if (changes && Object.keys(changes).length > 0) {
      throw problem('INTERNAL', `afterWrite of ${this.entity.names.key} returned changes for a deleted row`);
    }
  }

  /**
   * A command on the row by id, or on a singleton's row (id null): run gets the locked row, or
   * null when the singleton has none yet, and its returned values are inserted as the row.
   */
  async runCommand(ctx: TxContext, id: string | null, command: string, body: unknown, services: Services, prepared?: unknown): Promise<Row> {
    const definition = this.entity.def.commands?.[command];
    if (!definition) throw notFound();
    const previous = this.entity.singleton && id === null ? await this.find(ctx, null, true) : await this.read(ctx, id, { lock: true });
    const changes = (await definition.run(ctx, previous ?? null, body as never, services, prepared)) as Values | undefined;
    const source: Source = { kind: 'command', command };
    if (!previous) {
      // Nothing to insert: the singleton still does not exist.
      if (!changes) throw notFound();
      this.validate(changes, source);
      const row = await this.insert(ctx, changes);
      return this.afterWrite(ctx, { op: 'command', command, row });
    }
    if (!changes || Object.keys(changes).length === 0) return previous;
    this.validate(changes, source);
    const row = await this.write(ctx, previous, changes, source);
    if (!row) return previous;
    return this.afterWrite(ctx, { op: 'command', command, row, previous });
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

  /**
   * The row-access condition (`"owner_id" = $n and ...`, numbered from `first`) and its values;
   * empty for an entity that declares no rowAccess. The text depends only on the fields the filter
   * names, so each statement keeps one text and stays prepared.
   */
  private access(ctx: TxContext, first: number): { sql: string; params: unknown[] } {
    const rowAccess = this.entity.def.rowAccess;
    if (!rowAccess) return NO_ACCESS_FILTER;
    const filter = rowAccess(ctx) as Values;
    const fields = Object.keys(filter);
    const key = `${first}|${fields.join(',')}`;
    let sql = this.accessTexts.get(key);
    if (sql === undefined) {
      for (const field of fields) {
        if (!(field in this.entity.columns)) throw problem('INTERNAL', `rowAccess of ${this.entity.names.key} names ${field}, which is not a field`);
      }
      sql = fields.map((f, i) => `${quote(this.entity.columns[f]!)} = $${first + i}`).join(' and ');
      this.accessTexts.set(key, sql);
    }
    return { sql, params: fields.map((f) => this.toColumnValue(f, filter[f])) };
  }

  private async find(ctx: TxContext, id: string | null, lock: boolean): Promise<Row | undefined> {
    const suffix = lock ? ' for update' : '';
    if (id === null) {
      if (!this.entity.singleton) return undefined;
      const access = this.access(ctx, 1);
      // Row-level security leaves this tenant's rows, of which a unique index keeps one live.
      const text = `select ${this.selectList} from ${this.table}${where(this.live, access.sql)}${suffix}`;
      let rows = await run<Values>(ctx.db, text, access.params);
      if (!rows[0] && lock) {
        // No row to lock yet: whoever is about to create the tenant's one row takes turns on an
        // advisory lock, then looks again, so a concurrent second request finds the first one's
        // row (and answers as a serial repeat would) instead of colliding on the unique index.
        await run(ctx.db, SINGLETON_LOCK, [`singleton:${this.entity.names.table}:${ctx.tenant.id}`]);
        rows = await run<Values>(ctx.db, text, access.params);
      }
      return rows[0] ? this.toRow(rows[0]) : undefined;
    }
    if (!isUuid(id)) return undefined;
    const access = this.access(ctx, 2);
    const rows = await run<Values>(ctx.db, `select ${this.selectList} from ${this.table}${where('id = $1', this.live, access.sql)}${suffix}`, [id, ...access.params]);
    return rows[0] ? this.toRow(rows[0]) : undefined;
  }

  private async updateFrom(ctx: TxContext, previous: Row, input: Values): Promise<Row> {
    const hooks = this.entity.def.hooks;
    const adjusted = hooks?.beforeWrite ? { ...input, ...((await hooks.beforeWrite(ctx, { op: 'update', values: input, previous })) ?? {}) } : input;
    if (hooks?.beforeWrite) this.validate(adjusted, 'beforeWrite');
    const row = await this.write(ctx, previous, adjusted, { kind: 'body' });
    if (!row) return previous;
    return this.afterWrite(ctx, { op: 'update', row, previous });
  }

  private async insert(ctx: TxContext, values: Values): Promise<Row> {
    const fields = Object.keys(values).filter((f) => f in this.entity.columns && values[f] !== undefined);
    const text = fields.length
      ? `insert into ${this.table} (${fields.map((f) => quote(this.entity.columns[f]!)).join(', ')})
         values (${fields.map((_, i) => `$${i + 1}`).join(', ')}) returning ${this.selectList}`
      : `insert into ${this.table} default values returning ${this.selectList}`;
    const rows = await this.unique(run<Values>(ctx.db, text, fields.map((f) => this.toColumnValue(f, values[f]))));
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
  private async write(ctx: TxContext, previous: Row, changes: Values, source: Source): Promise<Row | undefined> {
    const changed = Object.keys(changes).filter(
      (f) => f in this.entity.columns && changes[f] !== undefined && !sameValue((previous as Values)[f], changes[f]),
    );
    if (changed.length === 0) return undefined;
    const assignments = changed.map((f, i) => `${quote(this.entity.columns[f]!)} = $${i + 2}`).join(', ');
    const rows = await this.unique(
      run<Values>(
        ctx.db,
        `update ${this.table} set ${assignments}, updated_at = now() where id = $1 returning ${this.selectList}`,
        [previous.id, ...changed.map((f) => this.toColumnValue(f, changes[f]))],
      ),
    );
    const row = this.toRow(rows[0]!);
    this.wrote(ctx);
    if (source.kind !== 'command') ctx.publish(this.entity.names.events.updated, { ...this.eventPayload(row), changed });
    return row;
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
    this.validate(changes, { kind: 'hook' });
    return (await this.write(ctx, input.row, changes, { kind: 'hook' })) ?? input.row;
  }

  /** Values produced by code (a command, a hook) meet the field schemas before they are stored. */
  private validate(values: Values, source: Source | 'beforeWrite'): void {
    const candidate: Values = {};
    for (const [field, value] of Object.entries(values)) {
      if (value !== undefined) candidate[field] = value instanceof Date ? value.toISOString() : value;
    }
    if (this.checkChanges.Check(candidate)) return;
    const by = source === 'beforeWrite' ? 'beforeWrite' : source.kind === 'command' ? `command ${source.command}` : 'afterWrite';
    // The same pointers as a refused body's: one per unknown field, one per field that fails.
    const errors: FieldError[] = [...this.checkChanges.Errors(candidate)].flatMap((e): FieldError[] => {
      const issue = e as { instancePath?: string; message?: string; keyword?: string; params?: { additionalProperties?: string[] } };
      if (issue.keyword === 'boolean') return [];
      if (issue.keyword === 'additionalProperties') {
        return (issue.params?.additionalProperties ?? []).map((name) => ({ pointer: `/${name}`, message: `not a field: ${name}` }));
      }
      return [{ pointer: issue.instancePath || '/', message: issue.message ?? 'invalid' }];
    });
    throw problem('VALIDATION_FAILED', `The values ${by} of ${this.entity.names.key} would store do not match the field schemas`, { errors });
  }

  /** The lifecycle events' payload: the id, and the fields the entity lists in eventFields. */
  private eventPayload(row: Row): Values {
    const payload: Values = { id: row.id };
    for (const field of this.entity.def.eventFields ?? []) payload[field] = (row as Values)[field];
    return payload;
  }

  /**
   * A write refused by a unique index the entity names in uniqueCodes answers that code (e.g.
   * SLUG_TAKEN) instead of the generic ALREADY_EXISTS; the transaction is rolled back either way.
   */
  private async unique<R>(write: Promise<R>): Promise<R> {
    try {
      return await write;
    } catch (err) {
      throw this.uniqueFailure(err);
    }
  }

  private uniqueFailure(err: unknown): unknown {
    const { code, constraint } = err as { code?: string; constraint?: string };
    if (code === '23505') {
      for (const [field, rule] of Object.entries(this.entity.def.uniqueCodes ?? {})) {
        if (rule && rule.index === constraint) {
          return problem(rule.code, `${field} is already used by another ${this.entity.names.label.toLowerCase()}`, { extensions: { field } });
        }
      }
    }
    return err;
  }

  private deleteText(): string {
    return this.entity.deleteMode === 'hard'
      ? `delete from ${this.table}`
      : `update ${this.table} set deleted_at = now(), updated_at = now()`;
  }

  private toColumnValue(field: string, value: unknown): unknown {
    const schema = this.entity.def.fields[field] as TSchema & { type?: string; items?: { type?: string } };
    const json = schema.type === 'object' || (schema.type === 'array' && schema.items?.type === 'object');
    return json && value !== null ? JSON.stringify(value) : value;
  }
}

/** Held until the transaction ends; keyed by the singleton's table and the tenant. */
const SINGLETON_LOCK = 'select pg_advisory_xact_lock(hashtextextended($1, 0))';

const NO_ACCESS_FILTER = Object.freeze({ sql: '', params: [] as unknown[] });

/** ` where a and b`, leaving out empty conditions (and the where, when none is left). */
const where = (...conditions: string[]): string => {
  const kept = conditions.filter((c) => c !== '');
  return kept.length > 0 ? ` where ${kept.join(' and ')}` : '';
};

// Every text here is assembled from the entity's declaration, so the set is small and fixed: each
// runs as a prepared statement.
async function run<R>(db: Transaction<Database>, text: string, params: unknown[]): Promise<R[]> {
  return (await db.executeQuery<R>(CompiledQuery.raw(prepared(text), params))).rows;
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a instanceof Date) return b !== null && b !== undefined && new Date(b as string).getTime() === a.getTime();
  if (typeof a === 'object' || typeof b === 'object') return JSON.stringify(a) === JSON.stringify(b);
  return a === b;
}
