import type { TSchema } from 'typebox';
import type { TxContext } from '../context/tx.ts';
import { fieldTypeOf, operatorsOf, type FieldType, type Operator } from './field-types.ts';

/**
 * What a list's query may name, worked out once at boot from the list's declaration: the fields
 * it filters and sorts by (with their SQL), the references it filters through and expands, and
 * the names `fields=` may select. Generated lists make theirs from the entity
 * (operations/entity-query.ts), hand-written lists from their own declaration (query-list.ts); the
 * parser (parse.ts) and the compiler (compile.ts) read nothing else.
 */

/** The list's own parameters: no field, computed field or reference may take one of these names. */
export const RESERVED_NAMES = ['limit', 'offset', 'sort', 'after', 'q', 'or', 'fields', 'expand', 'format'] as const;

export const isReservedName = (name: string): boolean => (RESERVED_NAMES as readonly string[]).includes(name);

export interface QueryField {
  /** As the query names it: `status`. */
  readonly name: string;
  readonly type: FieldType;
  readonly operators: readonly Operator[];
  /** The column as the list's statement names it: `"status"`, `t.slug`. Never from a request. */
  readonly column: string;
  /**
   * What a sort by the field orders by: the column, or for an enum its position in the declared
   * order (a CASE over the values, which an index on the same expression can serve).
   */
  readonly order: string;
  /** A declared index serves a sort by the column (in either direction unless nulls are possible). */
  readonly indexed: boolean;
}

/** An expanded or filtered-through row's values, as the referenced entity's read answers them. */
export type ReferencedRow = Record<string, unknown>;

/**
 * The entity a reference names, as a query reaches it: its fields, its read permission, and how its
 * rows are read, filtered and shaped the way its own read route answers them.
 */
export interface ReferenceTarget {
  /** The entity's key: `user.user`. */
  readonly key: string;
  /** The row its read route answers, as the OpenAPI document shows it. */
  readonly row: TSchema;
  /** Its read permission: filtering through it or expanding it needs the caller to hold it. */
  readonly permission: string;
  /** Its table, quoted. */
  readonly table: string;
  /** The condition every live row meets (empty for a hard-deleting entity). */
  readonly live: string;
  /** Its filterable fields, their columns unqualified (they are compared inside a subquery on its table). */
  readonly fields: ReadonlyMap<string, QueryField>;
  /** What `fields=<reference>.<name>` may select. */
  readonly selectable: ReadonlySet<string>;
  /**
   * Whether a statement can filter through it and expand it by itself, before the caller is known:
   * its rows need no caller (row access) and no code after the statement (afterRead).
   */
  readonly inStatement: boolean;
  /** A row of the table (as alias `x`) as one JSON value, for the expansion inside a statement. */
  readonly json: string;
  /** The row the read route answers, from that JSON value. */
  fromJson(value: unknown): ReferencedRow;
  /** The row-access condition of the caller on the table, its parameters numbered from `first`. */
  access(ctx: TxContext, first: number): { sql: string; params: unknown[] };
  /** The live rows the caller may read among these ids, shaped as the read route answers them: one statement. */
  readMany(ctx: TxContext, ids: readonly string[]): Promise<ReferencedRow[]>;
}

export interface QueryReference {
  /** As the query names it: `assignee`. */
  readonly name: string;
  /** The field holding the referenced row's id: `assigneeId`. */
  readonly field: string;
  /** That field's column, qualified by the list's table so a subquery can name it: `"tasks"."assignee_id"`. */
  readonly column: string;
  readonly target: ReferenceTarget;
}

export interface QueryModel {
  /** What messages call the list: `tasks`. */
  readonly label: string;
  /** The fields a query may filter by, and so sort by. */
  readonly fields: ReadonlyMap<string, QueryField>;
  /** Fields a query may sort by besides (declared sorts a narrowed `filterable` left out). */
  readonly sorts: ReadonlyMap<string, QueryField>;
  /** The references a query may filter through and expand. */
  readonly references: ReadonlyMap<string, QueryReference>;
  /** The names `fields=` may select (id is always in the answer). */
  readonly selectable: ReadonlySet<string>;
}

/** A field of a list as its declaration gives it: its schema, column and whether an index serves its sort. */
export interface FieldDeclaration {
  schema: TSchema;
  nullable: boolean;
  column: string;
  indexed: boolean;
}

const literal = (value: string) => `'${value.replaceAll("'", "''")}'`;

/** The query field for a declared field; undefined for one the language cannot compare (JSON). */
export function queryField(name: string, declared: FieldDeclaration): QueryField | undefined {
  const type = fieldTypeOf(declared.schema, declared.nullable);
  if (!type) return undefined;
  const order =
    type.kind === 'enum' && type.values
      ? `(case ${declared.column} ${type.values.map((v, i) => `when ${literal(v)} then ${i}`).join(' ')} end)`
      : declared.column;
  return {
    name,
    type,
    operators: operatorsOf(type),
    column: declared.column,
    order,
    // An enum sorts by its declared position, which the column's own index does not serve.
    indexed: declared.indexed && type.kind !== 'enum',
  };
}

/**
 * The sorts (with "-" for descending) an index serves: an indexed field ascending, and descending
 * where its column holds no null (nulls come last in both directions, which an index read
 * backwards gives only for a column without nulls).
 */
export function indexedSorts(model: Pick<QueryModel, 'fields' | 'sorts'>): string[] {
  const out: string[] = [];
  for (const field of [...model.fields.values(), ...model.sorts.values()]) {
    if (!field.indexed) continue;
    out.push(field.name);
    if (!field.type.nullable) out.push(`-${field.name}`);
  }
  return out;
}

/** Every field a query may sort by: the filterable ones and the declared sorts. */
export function sortFields(model: Pick<QueryModel, 'fields' | 'sorts'>): QueryField[] {
  return [...model.fields.values(), ...model.sorts.values()];
}
