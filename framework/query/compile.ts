import type { TxContext } from '../context/tx.ts';
import type { Clause, Condition, ListQuery } from './parse.ts';
import type { QueryReference } from './query-model.ts';
import type { FilterValue } from './values.ts';

/**
 * The one compiler of the query language: a parsed query's conditions as SQL conditions on the
 * list's columns, every value a parameter (`$n::type`), never text of the request. A condition's
 * text depends only on the field, the operator and whether it is negated, so a list keeps a few
 * statement texts however the values vary. The shapes stay index-friendly: a condition compares a
 * column, an enum's range is an `= any(...)` over the values it admits (no function of the column),
 * and a filter through a reference is `<column> in (select id from <table> where ...)`.
 */

export interface CompiledFilter {
  conditions: string[];
  params: unknown[];
}

/**
 * The search `q` over these columns, its text parameter `$n`: rows where any holds the text,
 * ignoring case (both sides through PostgreSQL's lower(), as `contains`), `%` and `_` as themselves.
 */
export const searchCondition = (columns: readonly string[], n: number): string =>
  `(${columns.map((column) => `strpos(lower(${column}), lower($${n}::text)) > 0`).join(' or ')})`;

/** The SQL expression, named `__x_<reference>`, of an expanded row read in the list's own statement. */
export const expansionColumn = (reference: QueryReference): string => `__x_${reference.name}`;

/**
 * The expanded row of each listed row as one JSON value beside it, read in the same statement:
 * the referenced live row, or null. Only for a target that needs no caller and no code
 * (ReferenceTarget.inStatement); the caller's read permission is checked beside the route's.
 */
export function expansionSelect(reference: QueryReference): string {
  const { target } = reference;
  return `(select ${target.json} from ${target.table} x where x."id" = ${reference.column}${target.live ? ` and ${target.live}` : ''}) as "${expansionColumn(reference)}"`;
}

class Compilation {
  readonly params: unknown[] = [];
  private readonly first: number;
  private readonly ctx: TxContext | undefined;

  constructor(first: number, ctx: TxContext | undefined) {
    this.first = first;
    this.ctx = ctx;
  }

  /** A parameter holding the value, cast to the type its column is compared as. */
  private param(value: unknown, type: string): string {
    this.params.push(value);
    return `$${this.first + this.params.length - 1}::${type}`;
  }

  condition(c: Condition): string {
    const sql = this.negated(c, this.comparison(c));
    const reference = c.reference;
    if (!reference) return sql;
    const { target } = reference;
    const parts = [target.live];
    if (!target.inStatement) {
      if (!this.ctx) throw new Error(`a filter through ${reference.name} needs the caller's transaction`);
      const access = target.access(this.ctx, this.first + this.params.length);
      if (access.sql) {
        parts.push(access.sql);
        this.params.push(...access.params);
      }
    }
    parts.push(sql);
    return `${reference.column} in (select "id" from ${target.table} where ${parts.filter((p) => p !== '').join(' and ')})`;
  }

  clause(c: Clause): string {
    return 'and' in c ? `(${c.and.map((m) => this.condition(m)).join(' and ')})` : this.condition(c);
  }

  private negated(c: Condition, sql: string): string {
    if (!c.negated) return sql;
    if (c.op === 'is' && c.value === null) return `${c.field.column} is not null`;
    return `not (${sql})`;
  }

  private comparison(c: Condition): string {
    const { column, type } = c.field;
    const value = c.value;
    switch (c.op) {
      case 'eq':
        return `${column} = ${this.param(value, type.sqlType)}`;
      case 'neq':
        return `${column} <> ${this.param(value, type.sqlType)}`;
      case 'gt':
      case 'gte':
      case 'lt':
      case 'lte': {
        if (type.kind === 'enum')
          return `${column} = any(${this.param(enumRange(type.values!, c.op, value as string), 'text[]')})`;
        const op = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[c.op];
        return `${column} ${op} ${this.param(value, type.sqlType)}`;
      }
      case 'in':
        return `${column} = any(${this.param(value, `${type.sqlType}[]`)})`;
      case 'is':
        return value === null ? `${column} is null` : `${column} is ${value ? 'true' : 'false'}`;
      case 'contains':
        if (type.kind === 'list') return `${column} @> ${this.param([value], type.sqlType)}`;
        // The same rule as q: plain text, no wildcards, case ignored. Both sides go through PostgreSQL's
        // lower(): JavaScript's lower-cases some letters otherwise (a final Σ to ς, İ to i + a dot).
        return `strpos(lower(${column}), lower(${this.param(value, 'text')})) > 0`;
      case 'startsWith':
        return `starts_with(lower(${column}), lower(${this.param(value, 'text')}))`;
    }
  }
}

/** The values of an enum that compare as asked with one of them, by declared position. */
export function enumRange(values: readonly string[], op: 'gt' | 'gte' | 'lt' | 'lte', value: string): string[] {
  const at = values.indexOf(value);
  return values.filter((_, i) => (op === 'gt' ? i > at : op === 'gte' ? i >= at : op === 'lt' ? i < at : i <= at));
}

/**
 * The query's conditions as SQL, their parameters numbered from `first`. `ctx`, the caller's
 * transaction, lets a filter through a reference apply the referenced entity's row access; without
 * it (one statement, before the caller is known) only a target that needs none may be named.
 */
export function compileFilter(query: ListQuery, first: number, ctx?: TxContext): CompiledFilter {
  const compilation = new Compilation(first, ctx);
  const conditions = query.conditions.map((c) => compilation.condition(c));
  if (query.or) conditions.push(`(${query.or.map((c) => compilation.clause(c)).join(' or ')})`);
  return { conditions, params: compilation.params };
}

export type { FilterValue };

/**
 * Conditions compiled with their parameters numbered from $1, numbered from `first` instead: for a
 * filter compiled once (a stream's, in its caller's transaction when it opens) and placed later in
 * statements that number parameters of their own before it. Every placeholder in the text is one
 * this compiler, or a row-access condition it took in, wrote (`$n`): values never enter the text.
 */
export function numberedFrom(conditions: readonly string[], first: number): string[] {
  return conditions.map((condition) => condition.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + first - 1}`));
}
