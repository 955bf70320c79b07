import Type, { type TSchema } from 'typebox';
import type { TxContext } from '../contracts/transaction.ts';
import type { LiveListDefinition } from '../entity/define.ts';
import type { ResolvedEntity } from '../entity/resolve.ts';
import type { EntityOperations } from '../operations/entity-ops.ts';
import { problem } from '../errors.ts';
import { followsEntity } from './follows.ts';
import { quote } from '../operations/entity-sql.ts';
import type { ListQuery } from '../query/parse.ts';
import { streamQuerySchema } from '../query/query-schema.ts';
import { QueryList } from '../query/query-list.ts';

/** What an event is to a stream before the stream's filters and row access are applied. */
export type ChangeKind = 'created' | 'updated' | 'deleted';

type Values = Record<string, unknown>;

/**
 * A list that can be followed live (framework/live): every generated list of a tenant's entity,
 * and the hand-written lists modules declare (LiveListDefinition). Worked out once at boot; the
 * hub's batches and the stream route read nothing else about the list.
 */
export interface LiveSource {
  /** The entity's key (`task.task`), or a hand-written list's operation id. */
  readonly key: string;
  /** The list's path; the stream is `<path>/stream`. */
  readonly path: string;
  readonly operationId: string;
  /** What the list holds, for people: `tasks`. */
  readonly label: string;
  readonly tags: readonly string[];
  readonly access: 'signedIn' | { permission: string };
  /** The feature the tenant's plan must grant, as the list's own route asks (403 FEATURE_NOT_IN_PLAN). */
  readonly feature: string | undefined;
  /** The table, quoted. */
  readonly table: string;
  /** The columns a batch reads of each changed row, unquoted, `id` first. */
  readonly columns: readonly string[];
  /** The condition every live row meets (a soft-deleted row does not), or ''. */
  readonly live: string;
  /** Event name → what it is to the list; the event's payload `id` names the row. */
  readonly kinds: ReadonlyMap<string, ChangeKind>;
  /** The entity whose commands' changes are `updated` (outbox.subject_entity), if any. */
  readonly subject: string | undefined;
  /** The item as the list answers it (the row a created or updated event carries). */
  readonly rowSchema: TSchema;
  /** The item of a row read by the batch (its columns, parsed as pg parses them). */
  item(values: Values): Values;
  /**
   * The row-access condition of a caller (`column = value` pairs, all to hold), decided once when
   * the stream opens, in its transaction; none: every row of the tenant.
   */
  accessOf(tx: TxContext): readonly (readonly [column: string, value: unknown])[];
  /** Rows may be hidden from a caller (row access): a change of a row that is gone goes to nobody. */
  readonly rowAccess: boolean;
  /** The entity's afterRead, run once per row in the batch's transaction (with no caller). */
  readonly present: ((tx: TxContext, row: Values) => unknown) | undefined;
  /**
   * The stream's query string: the list's filters, or and fields (streamQuerySchema), read by the
   * list's own parser; its conditions name columns of `table` as they stand in `from <table>`.
   */
  readonly querySchema: TSchema;
  /** The list's parser; undefined: the list takes no query, and nor does its stream. */
  readonly parse: ((query: Readonly<Record<string, unknown>>, now: Date) => ListQuery) | undefined;
}

/** The query string of a stream whose list takes none. */
const NO_STREAM_QUERY = Type.Object({}, { additionalProperties: false });

/**
 * The live source of an entity's generated list. A singleton has no list; a global entity's rows
 * change in the operator tenant's transactions, which no other tenant's stream can follow (its
 * positions are the tenant's own), so neither gets a stream.
 */
export function entitySource(entity: ResolvedEntity, ops: EntityOperations): LiveSource | undefined {
  if (!followsEntity(entity)) return undefined;
  const { names, def } = entity;
  const rowAccess = def.rowAccess;
  const afterRead = def.hooks?.afterRead;
  return {
    key: names.key,
    path: names.path,
    operationId: names.operationId('stream'),
    label: names.labelPlural.toLowerCase(),
    tags: [def.module],
    access: { permission: def.permissions.read },
    feature: def.feature,
    table: quote(names.table),
    columns: ['id', 'created_at', 'updated_at', ...entity.fields.map((f) => entity.columns[f]!)],
    live: entity.deleteMode === 'hard' ? '' : 'deleted_at is null',
    kinds: new Map<string, ChangeKind>([
      [names.events.created, 'created'],
      [names.events.updated, 'updated'],
      [names.events.deleted, 'deleted'],
    ]),
    subject: names.key,
    rowSchema: entity.schemas.row,
    item: (values) => ops.toRow(values),
    rowAccess: rowAccess !== undefined,
    accessOf: (tx) => {
      if (!rowAccess) return [];
      return Object.entries(rowAccess(tx) as Values).map(([field, value]) => {
        const column = entity.columns[field];
        if (column === undefined)
          throw problem('INTERNAL', `rowAccess of ${names.key} names ${field}, which is not a field`);
        return [column, ops.toColumnValue(field, value)] as const;
      });
    },
    present: afterRead ? (tx, row) => afterRead(tx, row as never) : undefined,
    querySchema: streamQuerySchema(ops.model),
    parse: (query, now) => ops.parse(query, now),
  };
}

/** The live source of a module's hand-written list. */
export function declaredSource(definition: LiveListDefinition): LiveSource {
  const fields = Object.entries(definition.columns);
  const owner = definition.owner;
  const query = definition.query;
  if (query !== undefined && !(query instanceof QueryList))
    throw new Error(
      `the live list ${definition.operationId} declares a query that is no QueryList (framework/query/query-list.ts)`,
    );
  const columns = [...new Set(['id', ...fields.map(([, column]) => column), ...(owner ? [owner] : [])])];
  return {
    key: definition.operationId,
    path: definition.path,
    operationId: definition.operationId,
    label: definition.label,
    tags: definition.tags ?? [],
    access: definition.access,
    feature: definition.feature,
    table: quote(definition.table),
    columns,
    live: '',
    kinds: new Map(Object.entries(definition.events)),
    subject: undefined,
    rowSchema: definition.item,
    item: (values) => Object.fromEntries(fields.map(([field, column]) => [field, values[column]])),
    rowAccess: owner !== undefined,
    accessOf: (tx) => (owner ? [[owner, tx.session?.userId ?? null]] : []),
    present: undefined,
    querySchema: query ? streamQuerySchema(query.model) : NO_STREAM_QUERY,
    parse: query ? (written, now) => query.parse(written, now) : undefined,
  };
}

/** The events some stream shows, by name: the relay gives them positions (with the commands' changes). */
export function liveEventNames(sources: readonly LiveSource[]): ReadonlySet<string> {
  return new Set(sources.flatMap((s) => [...s.kinds.keys()]));
}
