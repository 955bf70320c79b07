import { CompiledQuery, type Transaction } from 'kysely';
import type { TSchema } from 'typebox';
import type { Database } from '../db/types.ts';
import type { TxContext } from '../context/tx.ts';
import type { ResolvedEntity } from '../entity/resolve.ts';
import type { EntityRow } from '../entity/define.ts';
import type { TProperties } from 'typebox';
import type { Services } from '../services.ts';
import { notFound } from '../errors.ts';
import { prepared } from '../db/statements.ts';
import { KeysetPager, type ListFilter, type Page, type PageQuery } from './paging.ts';
import Type from 'typebox';

type Row = EntityRow<TProperties>;
type Values = Record<string, unknown>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (value: string): boolean => UUID.test(value);

const quote = (identifier: string): string => `"${identifier.replaceAll('"', '""')}"`;

/**
 * The generic operations of one entity, with their SQL built once at boot. No HTTP here: each
 * takes the transaction context the caller opened. Row-level security scopes every statement to
 * the transaction's tenant; soft-deleted rows are invisible to all of them.
 */
export class EntityOperations {
  readonly entity: ResolvedEntity;
  private readonly table: string;
  private readonly selectList: string;
  private readonly fromColumn: Map<string, string>;
  /** Pages of live rows; a row filter joins as a ListFilter (see framework/operations/paging.ts). */
  readonly pager: KeysetPager;

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
    const columnOf = (field: string) => (field === 'createdAt' ? 'created_at' : field === 'updatedAt' ? 'updated_at' : entity.columns[field]);
    this.pager = new KeysetPager({
      select: this.selectList,
      from: this.table,
      id: 'id',
      where: ['deleted_at is null'],
      // A sortable name that is no field is the startup checks' to refuse, by name; not built here.
      sorts: Object.fromEntries(
        entity.sortable
          .filter((f) => columnOf(f) !== undefined)
          .map((f) => [f, { column: quote(columnOf(f)!), nullable: f in entity.def.fields && Type.IsOptional(entity.def.fields[f]!) }]),
      ),
    });
  }

  /**
   * A page of live rows in the sort asked for, ties broken by id; `filter` narrows it (and its
   * count) further. Reads the page from the (tenant_id, column, id) index, by keyset after a cursor.
   */
  async list(ctx: TxContext, page: PageQuery, filter?: ListFilter): Promise<Page<Row>> {
    const result = await this.pager.page(ctx.db, page, filter);
    return { ...result, items: result.items.map((r) => this.toRow(r)) };
  }

  async read(ctx: TxContext, id: string, options: { lock?: boolean } = {}): Promise<Row> {
    if (!isUuid(id)) throw notFound();
    const rows = await run<Values>(
      ctx.db,
      `select ${this.selectList} from ${this.table} where id = $1 and deleted_at is null${options.lock ? ' for update' : ''}`,
      [id],
    );
    if (!rows[0]) throw notFound();
    return this.toRow(rows[0]);
  }

  async create(ctx: TxContext, input: Values): Promise<Row> {
    const hooks = this.entity.def.hooks;
    const adjusted = { ...input, ...((await hooks?.beforeWrite?.(ctx, { op: 'create', values: input })) ?? {}) };
    const fields = Object.keys(adjusted).filter((f) => f in this.entity.columns && adjusted[f] !== undefined);
    const text = fields.length
      ? `insert into ${this.table} (${fields.map((f) => quote(this.entity.columns[f]!)).join(', ')})
         values (${fields.map((_, i) => `$${i + 1}`).join(', ')}) returning ${this.selectList}`
      : `insert into ${this.table} default values returning ${this.selectList}`;
    const rows = await run<Values>(ctx.db, text, fields.map((f) => this.toColumnValue(f, adjusted[f])));
    const row = this.toRow(rows[0]!);
    ctx.publish(this.entity.names.events.created, { id: row.id });
    await hooks?.afterWrite?.(ctx, { op: 'create', row });
    return row;
  }

  async update(ctx: TxContext, id: string, input: Values): Promise<Row> {
    const previous = await this.read(ctx, id, { lock: true });
    const hooks = this.entity.def.hooks;
    const adjusted = { ...input, ...((await hooks?.beforeWrite?.(ctx, { op: 'update', values: input, previous })) ?? {}) };
    return this.applyChanges(ctx, previous, adjusted, 'update');
  }

  async softDelete(ctx: TxContext, id: string): Promise<void> {
    if (!isUuid(id)) throw notFound();
    const rows = await run<Values>(
      ctx.db,
      `update ${this.table} set deleted_at = now(), updated_at = now() where id = $1 and deleted_at is null returning ${this.selectList}`,
      [id],
    );
    if (!rows[0]) throw notFound();
    const row = this.toRow(rows[0]);
    ctx.publish(this.entity.names.events.deleted, { id: row.id });
    await this.entity.def.hooks?.afterWrite?.(ctx, { op: 'delete', row });
  }

  async runCommand(ctx: TxContext, id: string, command: string, body: unknown, services: Services): Promise<Row> {
    const definition = this.entity.def.commands?.[command];
    if (!definition) throw notFound();
    const previous = await this.read(ctx, id, { lock: true });
    const changes = await definition.run(ctx, previous, body as never, services);
    if (!changes || Object.keys(changes).length === 0) return previous;
    return this.applyChanges(ctx, previous, changes as Values, 'command');
  }

  /** Writes the fields that differ from the stored row; nothing differs, nothing is written or published. */
  private async applyChanges(ctx: TxContext, previous: Row, changes: Values, via: 'update' | 'command'): Promise<Row> {
    const changed = Object.keys(changes).filter(
      (f) => f in this.entity.columns && changes[f] !== undefined && !sameValue((previous as Values)[f], changes[f]),
    );
    if (changed.length === 0) return previous;
    const assignments = changed.map((f, i) => `${quote(this.entity.columns[f]!)} = $${i + 2}`).join(', ');
    const rows = await run<Values>(
      ctx.db,
      `update ${this.table} set ${assignments}, updated_at = now() where id = $1 returning ${this.selectList}`,
      [previous.id, ...changed.map((f) => this.toColumnValue(f, changes[f]))],
    );
    const row = this.toRow(rows[0]!);
    // A command publishes its own, more specific event (task.assigned); a PATCH publishes .updated.
    if (via === 'update') ctx.publish(this.entity.names.events.updated, { id: row.id, changed });
    await this.entity.def.hooks?.afterWrite?.(ctx, { op: 'update', row, previous });
    return row;
  }

  toRow(values: Values): Row {
    const row: Values = {};
    for (const [column, value] of Object.entries(values)) {
      const field = this.fromColumn.get(column);
      if (field) row[field] = value;
    }
    return row as Row;
  }

  private toColumnValue(field: string, value: unknown): unknown {
    const schema = this.entity.def.fields[field] as TSchema & { type?: string; items?: { type?: string } };
    const json = schema.type === 'object' || (schema.type === 'array' && schema.items?.type === 'object');
    return json && value !== null ? JSON.stringify(value) : value;
  }
}

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
