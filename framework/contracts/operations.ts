import type { TProperties } from 'typebox';
import type { EntityRow } from '../entity/entity-values.ts';
import type { ResolvedEntity } from './entity.ts';
import type { Services } from './services.ts';
import type { TxContext } from './transaction.ts';

/** The paging parameters as a handler receives them (defaults filled in by validation). */
export interface PageQuery {
  limit: number;
  offset: number;
  sort: string;
  after?: string;
  /** Search text (lists that declare searchable fields): rows whose fields contain it, ignoring case. */
  q?: string;
}

export interface Page<T> {
  items: T[];
  total: number;
  totalExact: boolean;
  limit: number;
  offset: number;
  next: string | null;
}

type Row = EntityRow<TProperties>;

/**
 * A condition of the framework's own on a list (a picker's people who can act: access/actors.ts),
 * its parameters numbered from a given one (EntityOperationsApi.list's `narrow`).
 */
export type Narrowing = (first: number) => { sql: string; params: unknown[] };

/**
 * The generic operations of one entity over a transaction its caller opened (no HTTP):
 * framework/operations/entity-ops.ts. A singleton entity is addressed with id null.
 */
export interface EntityOperationsApi {
  readonly entity: ResolvedEntity;
  /** `narrow` adds a condition of the framework's own, after the caller's row access and search. */
  list(ctx: TxContext, page: PageQuery, narrow?: Narrowing): Promise<Page<Row>>;
  read(ctx: TxContext, id: string | null, options?: { lock?: boolean }): Promise<Row>;
  /** The live rows the caller may see among these ids, in one statement. */
  readMany(ctx: TxContext, ids: readonly string[]): Promise<Row[]>;
  create(ctx: TxContext, input: Record<string, unknown>): Promise<Row>;
  update(ctx: TxContext, id: string | null, input: Record<string, unknown>): Promise<Row>;
  replace(ctx: TxContext, input: Record<string, unknown>): Promise<{ row: Row; created: boolean }>;
  remove(ctx: TxContext, id: string | null): Promise<void>;
  /**
   * Counts (and sums, averages, minimums, maximums) of the rows the caller may see, per group, as
   * GET <list>/summary answers them for this query string (framework/query/summary.ts).
   */
  summary(
    ctx: TxContext,
    query: Record<string, unknown>,
  ): Promise<{ groups: Record<string, unknown>[]; total: number; truncated: boolean }>;
  /**
   * Runs fn after every committed write of this entity, in this process, before the request that
   * wrote answers (the public read's validator cache; other processes learn it by NOTIFY).
   */
  onCommittedWrite(fn: (tenantId: string) => void): void;
  runCommand(
    ctx: TxContext,
    id: string | null,
    command: string,
    body: unknown,
    services: Services,
    prepared?: unknown,
  ): Promise<Row>;
}
