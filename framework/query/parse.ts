import { problem, type ProblemError } from '../errors.ts';
import { isValuesOf, type Operator } from './field-types.ts';
import { isReservedName, type QueryField, type QueryModel, type QueryReference } from './query-model.ts';
import { readValue, type FilterValue } from './values.ts';

/**
 * Reads a list's query string into what the compiler needs, checked against the list's query
 * model: the filters (`<field>=<operator>.<value>`, and one `or=(...)` group), the fields to
 * select and the references to expand. Each request's text is read once, here; anything that does
 * not fit is 422 VALIDATION_FAILED pointing at the parameter, with a message that says what would
 * have been accepted. The syntax (docs/api-conventions.md, "Filters"):
 *
 *   status=in.(open,acknowledged)   deadline=lt.now   priority=gte.high   assigneeId=not.is.null
 *   or=(status.eq.open,and(priority.eq.high,deadline.lt.now-7d))   fields=title,assignee.displayName
 */

/** At most this many conditions per request, counted over every parameter and the or group. */
export const CONDITIONS_MAX = 20;
/** At most this many values in one `in.(...)`. */
export const IN_VALUES_MAX = 100;

export interface Condition {
  readonly field: QueryField;
  /** The reference the field is reached through (`assignee.displayName`), if any. */
  readonly reference?: QueryReference;
  readonly op: Operator;
  readonly negated: boolean;
  /** eq..lte, contains, startsWith: one value; in: the values; is: null, true or false. */
  readonly value: FilterValue | readonly FilterValue[] | null;
}

export type Clause = Condition | { readonly and: readonly Condition[] };

/** Which fields an answer keeps: its own (id always), and inside each expansion. */
export interface Selection {
  /** The row's own fields to keep; undefined: all of them. */
  readonly own: ReadonlySet<string> | undefined;
  /** Per expansion, the fields to keep inside it (undefined: all of them). */
  readonly inside: ReadonlyMap<string, ReadonlySet<string> | undefined>;
}

export interface ListQuery {
  /** Conditions that all hold (AND). */
  readonly conditions: readonly Condition[];
  /** One group of which at least one member holds. */
  readonly or?: readonly Clause[];
  /** `fields=`: undefined when the whole row is answered. */
  readonly select?: Selection;
  /** The references each answered row carries expanded (`expand=`, or named inside `fields=`). */
  readonly expand: readonly QueryReference[];
  /** Every reference the query reads through, filters and expansions: each needs its read permission. */
  readonly references: readonly QueryReference[];
  /**
   * The filters as the request wrote them, in a canonical order: what a cursor given under them is
   * bound to (`deadline=lt.now` stays the same filter from page to page while `now` moves on).
   */
  readonly written: string;
}

export const NO_QUERY: ListQuery = Object.freeze({ conditions: [], expand: [], references: [], written: '' });

/** Whether a query asks anything of the list beyond paging. */
export const isEmptyQuery = (query: ListQuery): boolean =>
  query.conditions.length === 0 && query.or === undefined && query.select === undefined && query.expand.length === 0;

/** A refused parameter; its message names the field and says what would have been accepted. */
const refusal = (parameter: string, message: string): ProblemError =>
  problem('VALIDATION_FAILED', message, { errors: [{ pointer: `/querystring/${parameter}`, message }] });

const OPERATOR_NAMES = new Set<string>(['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'is', 'contains', 'startsWith']);

/** The operators a field takes, as a refusal lists them. */
export const operatorList = (field: QueryField): string =>
  `${field.operators.join(', ')} (each may follow not., as in ${field.name}=not.${field.operators[0]}.<value>)`;

/** A value as the query wrote it: double quotes around it are the syntax's, not the value's. */
function unquote(text: string): string {
  if (text.length < 2 || !text.startsWith('"') || !text.endsWith('"')) return text;
  return text.slice(1, -1).replace(/\\(["\\])/g, '$1');
}

/**
 * Reads the text from `at`: a double-quoted value (with \" and \\ inside), or a bare one running up
 * to the next `,` or `)`; `(` is not allowed bare. Returns the value and where reading stopped.
 */
function readItem(text: string, at: number): { value: string; end: number } | undefined {
  if (text[at] === '"') {
    let value = '';
    for (let i = at + 1; i < text.length; i++) {
      const c = text[i]!;
      if (c === '\\' && (text[i + 1] === '"' || text[i + 1] === '\\')) {
        value += text[i + 1];
        i++;
      } else if (c === '"') return { value, end: i + 1 };
      else value += c;
    }
    return undefined;
  }
  let end = at;
  while (end < text.length && text[end] !== ',' && text[end] !== ')') {
    if (text[end] === '(' || text[end] === '"') return undefined;
    end++;
  }
  return { value: text.slice(at, end), end };
}

/** `(a,b,"c,d")` from `at`: the items and where the list ended (after its `)`). */
function readList(text: string, at: number): { items: string[]; end: number } | undefined {
  if (text[at] !== '(') return undefined;
  const items: string[] = [];
  let i = at + 1;
  if (text[i] === ')') return { items, end: i + 1 };
  for (;;) {
    const item = readItem(text, i);
    if (!item) return undefined;
    items.push(item.value);
    i = item.end;
    if (text[i] === ',') i++;
    else if (text[i] === ')') return { items, end: i + 1 };
    else return undefined;
  }
}

interface Target {
  field: QueryField;
  reference?: QueryReference;
}

/** Reads one query into conditions, selection and expansions; see the module's comment. */
export class QueryParser {
  private readonly model: QueryModel;
  private readonly now: Date;
  private count = 0;
  private readonly used = new Set<QueryReference>();

  constructor(model: QueryModel, now: Date) {
    this.model = model;
    this.now = now;
  }

  parse(query: Readonly<Record<string, unknown>>): ListQuery {
    const conditions: Condition[] = [];
    for (const [parameter, raw] of Object.entries(query)) {
      if (isReservedName(parameter) || raw === undefined) continue;
      const target = this.target(parameter, parameter);
      for (const text of Array.isArray(raw) ? raw : [raw]) {
        conditions.push(this.condition(target, String(text), parameter));
      }
    }
    const or = typeof query.or === 'string' ? this.orGroup(query.or) : undefined;
    const expand = new Map<string, QueryReference>();
    if (typeof query.expand === 'string') {
      for (const name of this.names(query.expand, 'expand')) expand.set(name, this.expansion(name));
    }
    const select = typeof query.fields === 'string' ? this.selection(query.fields, expand) : undefined;
    for (const reference of expand.values()) this.used.add(reference);
    const filters = Object.keys(query)
      .filter((name) => (name === 'or' || !isReservedName(name)) && query[name] !== undefined)
      .sort();
    return {
      written: filters.length > 0 ? JSON.stringify(filters.map((name) => [name, query[name]])) : '',
      conditions,
      ...(or ? { or } : {}),
      ...(select ? { select } : {}),
      expand: [...expand.values()],
      references: [...this.used],
    };
  }

  /** The field a parameter (or an or member) names: its own, or a referenced entity's through `reference.field`. */
  private target(name: string, parameter: string): Target {
    const own = this.model.fields.get(name);
    if (own) return { field: own };
    const dot = name.indexOf('.');
    const reference = dot > 0 ? this.model.references.get(name.slice(0, dot)) : undefined;
    const field = reference?.target.fields.get(name.slice(dot + 1));
    if (reference && field) {
      this.used.add(reference);
      return { field: { ...field, name }, reference };
    }
    const fields = [...this.model.fields.keys()];
    const through = [...this.model.references.values()].map((r) => `${r.name}.<a field of ${r.target.key}>`);
    throw refusal(
      parameter,
      `${this.model.label} are not filtered by ${name}; they are filtered by ${[...fields, ...through].join(', ')}`,
    );
  }

  private counted(parameter: string): void {
    this.count += 1;
    if (this.count > CONDITIONS_MAX)
      throw refusal(parameter, `at most ${CONDITIONS_MAX} conditions per request, counting each of or's members`);
  }

  /** `[not.]<operator>.<value>` for the target, from a parameter's text (or an or member's rest). */
  private condition(target: Target, text: string, parameter: string): Condition {
    this.counted(parameter);
    const { field } = target;
    const negated = text.startsWith('not.');
    const rest = negated ? text.slice(4) : text;
    const dot = rest.indexOf('.');
    const op = dot > 0 ? rest.slice(0, dot) : rest;
    if (!OPERATOR_NAMES.has(op) || !field.operators.includes(op as Operator)) {
      throw refusal(
        parameter,
        `${field.name} takes ${operatorList(field)}; ${dot > 0 ? `"${op}" is not one of them` : `write ${field.name}=<operator>.<value>`}`,
      );
    }
    if (dot < 0) throw refusal(parameter, `${field.name}=${op} needs a value: ${field.name}=${op}.<value>`);
    const operator = op as Operator;
    const written = rest.slice(dot + 1);
    return {
      field,
      ...(target.reference ? { reference: target.reference } : {}),
      op: operator,
      negated,
      value: this.operand(field, operator, written, parameter),
    };
  }

  private operand(field: QueryField, op: Operator, written: string, parameter: string): Condition['value'] {
    if (op === 'is') {
      const words = isValuesOf(field.type);
      const word = unquote(written);
      if (!words.includes(word)) throw refusal(parameter, `${field.name}=is takes ${words.join(' or ')}`);
      return word === 'null' ? null : word === 'true';
    }
    if (op === 'in') {
      const list = readList(written, 0);
      if (!list || list.end !== written.length) {
        throw refusal(
          parameter,
          `${field.name}=in takes a list in parentheses: in.(a,b,c), a value holding , ( ) or " in double quotes ("a,b"), with \\" and \\\\ inside them`,
        );
      }
      if (list.items.length === 0 || list.items.length > IN_VALUES_MAX)
        throw refusal(parameter, `${field.name}=in takes 1 to ${IN_VALUES_MAX} values`);
      return list.items.map((item) => this.value(field, item, parameter));
    }
    const value = unquote(written);
    if ((op === 'contains' || op === 'startsWith') && field.type.kind === 'text') {
      if (value === '') throw refusal(parameter, `${field.name}=${op} takes at least one character`);
      // Case is ignored: the compiler lower-cases both sides with PostgreSQL's lower(), not this one's.
      return value;
    }
    return this.value(field, value, parameter);
  }

  private value(field: QueryField, text: string, parameter: string): FilterValue {
    const read = readValue(field.type, text, this.now);
    if (!read.ok) throw refusal(parameter, `${field.name}: "${text}" is not ${read.expected}`);
    return read.value;
  }

  /** `(member,member,...)`, each `field.[not.]op.value` or `and(member,...)` (one level). */
  private orGroup(text: string): Clause[] {
    const syntax = () =>
      refusal(
        'or',
        'or takes one group in parentheses: or=(status.eq.open,and(priority.eq.high,deadline.lt.now)), each member <field>.<operator>.<value> or and(...) of such members, a value holding , ( ) or " in double quotes',
      );
    if (!text.startsWith('(')) throw syntax();
    const clauses: Clause[] = [];
    let at = 1;
    for (;;) {
      if (text.startsWith('and(', at)) {
        const members: Condition[] = [];
        at += 4;
        for (;;) {
          const member = this.member(text, at, syntax);
          members.push(member.condition);
          at = member.end;
          if (text[at] === ',') at++;
          else if (text[at] === ')') {
            at++;
            break;
          } else throw syntax();
        }
        clauses.push({ and: members });
      } else {
        const member = this.member(text, at, syntax);
        clauses.push(member.condition);
        at = member.end;
      }
      if (text[at] === ',') at++;
      else if (text[at] === ')' && at === text.length - 1) return clauses;
      else throw syntax();
    }
  }

  /** One member of an or group from `at`: the field, then its `[not.]op.value`, up to the next , or ). */
  private member(text: string, at: number, syntax: () => ProblemError): { condition: Condition; end: number } {
    const name = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?/.exec(text.slice(at));
    if (!name) throw syntax();
    // `assignee.displayName.eq.x` names a reference's field, `actor.userId.eq.x` an own field inside
    // an object of the answer; `status.eq.x` an own field.
    let fieldName = name[0];
    if (
      name[1] &&
      !this.model.fields.has(fieldName) &&
      !this.model.references.has(fieldName.slice(0, fieldName.indexOf('.')))
    )
      fieldName = fieldName.slice(0, fieldName.indexOf('.'));
    if (fieldName === 'and' || fieldName === 'or') throw refusal('or', 'or groups nest and(...) one level deep only');
    const target = this.target(fieldName, 'or');
    let i = at + fieldName.length;
    if (text[i] !== '.') throw syntax();
    i++;
    const start = i;
    if (text.startsWith('not.', i)) i += 4;
    const op = /^[A-Za-z]+/.exec(text.slice(i));
    if (!op) throw syntax();
    i += op[0].length;
    if (text[i] !== '.') return { condition: this.condition(target, text.slice(start, i), 'or'), end: i };
    i++;
    let end: number;
    if (op[0] === 'in') {
      const list = readList(text, i);
      if (!list) throw syntax();
      end = list.end;
    } else {
      const item = readItem(text, i);
      if (!item) throw syntax();
      end = item.end;
    }
    return { condition: this.condition(target, text.slice(start, end), 'or'), end };
  }

  private names(text: string, parameter: string): string[] {
    const names = text.split(',').map((n) => n.trim());
    if (names.some((n) => n === '')) throw refusal(parameter, `${parameter} takes names separated by commas`);
    return names;
  }

  private expansion(name: string): QueryReference {
    const reference = this.model.references.get(name);
    if (reference) return reference;
    const known = [...this.model.references.keys()];
    throw refusal(
      'expand',
      known.length > 0
        ? `${this.model.label} expand ${known.join(', ')}; "${name}" is none of them`
        : `${this.model.label} have no references to expand`,
    );
  }

  private selection(text: string, expand: Map<string, QueryReference>): Selection {
    const own = new Set<string>();
    const inside = new Map<string, Set<string> | undefined>();
    for (const name of this.names(text, 'fields')) {
      if (name === 'id') continue;
      if (this.model.selectable.has(name)) {
        own.add(name);
        continue;
      }
      const dot = name.indexOf('.');
      const referenceName = dot > 0 ? name.slice(0, dot) : name;
      const reference = this.model.references.get(referenceName);
      if (reference && dot < 0) {
        // The whole expanded row.
        expand.set(reference.name, reference);
        inside.set(reference.name, undefined);
        continue;
      }
      const field = reference ? name.slice(dot + 1) : undefined;
      if (reference && field !== undefined && (field === 'id' || reference.target.selectable.has(field))) {
        // A field inside an expansion expands the reference.
        expand.set(reference.name, reference);
        if (!inside.has(reference.name) || inside.get(reference.name) !== undefined) {
          const kept = inside.get(reference.name) ?? new Set<string>();
          if (field !== 'id') kept.add(field);
          inside.set(reference.name, kept);
        }
        continue;
      }
      const references = [...this.model.references.values()].map(
        (r) => `${r.name} or ${r.name}.<a field of ${r.target.key}>`,
      );
      throw refusal(
        'fields',
        `"${name}" is not a field of ${this.model.label}; fields takes ${['id', ...this.model.selectable, ...references].join(', ')}`,
      );
    }
    return { own, inside };
  }
}

/** The list query a request's query string asks for. */
export function parseListQuery(model: QueryModel, query: Readonly<Record<string, unknown>>, now: Date): ListQuery {
  return new QueryParser(model, now).parse(query);
}
