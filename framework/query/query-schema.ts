import Type, { type TProperties, type TSchema } from 'typebox';
import {
  CURSOR_MAX_LENGTH,
  OFFSET_MAX,
  PAGE_LIMIT_DEFAULT,
  PAGE_LIMIT_MAX,
  SEARCH_MAX_LENGTH,
} from '../operations/page-query.ts';
import { withRefusal, withUnknownRefusal } from './refusals.ts';
import { CONDITIONS_MAX, IN_VALUES_MAX, operatorList } from './parse.ts';
import { indexedSorts, sortFields, type QueryField, type QueryModel } from './query-model.ts';
import { expectedOf } from './values.ts';
import { isValuesOf } from './field-types.ts';
import { summaryParameters } from './summary.ts';

/**
 * A list's query string as its route declares it, from the list's query model, once at boot: the
 * paging parameters, one parameter per filterable field (own, and through each reference) whose
 * description lists its operators and whose pattern admits only them, `or`, `fields` and `expand`
 * with the names they take. These are the OpenAPI document's parameters too; each refusal of the
 * schema says what would have been accepted (http/refusals.ts).
 */

const escapeRegExp = (name: string) => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `^(a|b)(,(a|b))*$`: a comma-separated list of these names. */
const namesPattern = (names: readonly string[]): string => {
  const one = `(${names.map(escapeRegExp).join('|')})`;
  return `^${one}(,${one})*$`;
};

function example(field: QueryField): string {
  const name = field.name;
  switch (field.type.kind) {
    case 'enum': {
      const values = field.type.values ?? [];
      return values.length > 1 ? `${name}=in.(${values.slice(0, 2).join(',')})` : `${name}=eq.${values[0]}`;
    }
    case 'dateTime':
      return `${name}=lt.now, ${name}=gte.now-7d`;
    case 'integer':
    case 'number':
      return `${name}=gte.10`;
    case 'boolean':
      return `${name}=is.true`;
    case 'uuid':
      return field.type.nullable ? `${name}=not.is.null` : `${name}=eq.<uuid>`;
    case 'list':
      return `${name}=contains.<value>`;
    default:
      return `${name}=contains.text`;
  }
}

/** The parameter filtering by one field: text, or the same parameter repeated (all the conditions hold). */
function filterParameter(field: QueryField, through?: string, bareEq = false): TSchema {
  const operators = field.operators;
  const values = field.type.kind === 'text' ? '' : ` Values: ${expectedOf(field.type)}.`;
  const is = operators.includes('is') ? ` is takes ${isValuesOf(field.type).join(' or ')}.` : '';
  const description =
    `Filter${through ? ` through ${through}` : ''} by ${field.name}: <operator>.<value> with ${field.operators.join(', ')}, each also after not. (e.g. ${example(field)}).` +
    `${values}${is}${operators.includes('in') ? ` in takes up to ${IN_VALUES_MAX} values in parentheses, one holding , ( ) or " in double quotes.` : ''}` +
    `${operators.includes('contains') && field.type.kind === 'text' ? ' contains and startsWith ignore case and take the text as written (no wildcards).' : ''}` +
    ' Repeat the parameter for several conditions on the field: all of them hold.' +
    (bareEq ? ` A bare value (${field.name}=<value>) reads as eq.` : '');
  const operator = `(not\\.)?(${operators.join('|')})\\.`;
  // A bare value holds no "." nor "(": it cannot be read as an operator.
  const pattern = bareEq ? `^(${operator}|[^.(]+$)` : `^${operator}`;
  const refused = `${field.name} takes ${operatorList(field)}, as <operator>.<value>`;
  return withRefusal(
    Type.Optional(
      Type.Union([Type.String({ pattern }), Type.Array(Type.String({ pattern }), { minItems: 1 })], { description }),
    ),
    refused,
  );
}

export interface ListQueryOptions {
  defaultSort: string;
  /** Fields `q` searches, when the list has a search. */
  searches?: readonly string[];
  /** A sentence on the list's order, before what the sort parameter takes. */
  sortDescription?: string;
  /**
   * Fields whose parameter also takes a bare value, read as eq (`userId=<id>` for `userId=eq.<id>`):
   * a parameter the list took before it took the query language, kept for the callers who send it.
   */
  bareEq?: readonly string[];
}

/** The parameters of a list: paging, sort, q, the filters, or, fields and expand. */
export function listQuerySchema(model: QueryModel, options: ListQueryOptions) {
  const sorts = sortFields(model).map((f) => f.name);
  const served = indexedSorts(model);
  const properties: TProperties = {
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: PAGE_LIMIT_MAX,
        default: PAGE_LIMIT_DEFAULT,
        description: `Page size, 1 to ${PAGE_LIMIT_MAX}.`,
      }),
    ),
    offset: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: OFFSET_MAX,
        default: 0,
        description: `Rows to skip, 0 to ${OFFSET_MAX}. Deeper pages are reached with after=<next>, which costs the same on every page; offset and after do not combine.`,
      }),
    ),
    sort: withRefusal(
      Type.Optional(
        Type.String({
          pattern: namesPattern(sorts.flatMap((s) => [s, `-${s}`])),
          default: options.defaultSort,
          description: [
            options.sortDescription,
            `Sort keys in order, separated by commas (sort=${sorts[1] ?? sorts[0]},-${sorts[0]}): a field, "-" before it for descending; ties break on id, in the last key's direction. An enum sorts in its declared order; rows without a value come last in both directions.`,
            `Sorts by: ${sorts.join(', ')}.`,
            `An index serves: ${served.join(', ')}; any other order reads and sorts the matching rows.`,
          ]
            .filter((s) => s)
            .join(' '),
        }),
      ),
      `sort takes ${sorts.join(', ')}, each also with "-" for descending, several separated by commas`,
    ),
    after: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: CURSOR_MAX_LENGTH,
        pattern: '^[A-Za-z0-9_-]+$',
        description:
          'Opaque cursor: the "next" of the previous page, with the same sort, filters and q. Answers the rows after that page (keyset paging). A cursor this list did not give, or one given for another sort or other filters, is 422 VALIDATION_FAILED.',
      }),
    ),
  };
  Object.assign(
    properties,
    searchParameter(
      options.searches ?? [],
      ` (a plain substring: no wildcards, no operators). total and paging count the matching rows. 1 to ${SEARCH_MAX_LENGTH} characters.`,
    ),
  );
  Object.assign(properties, filterParameters(model, options.bareEq ?? []));
  properties.or = orParameter();
  Object.assign(properties, selectionParameters(model, 'item'));
  properties.format = withRefusal(
    Type.Optional(
      Type.String({
        enum: ['json', 'csv', 'ndjson'],
        description:
          'json (a page, the default), or every matching row as a download: csv (text/csv, RFC 4180, a header line of the field names) or ndjson (application/x-ndjson, one JSON object a line), in the sort asked for, with the filters and fields= applied; limit, offset and after do not apply. Wins over Accept, which may ask for text/csv or application/x-ndjson instead. docs/api-conventions.md, "Exports".',
      }),
    ),
    'format takes json, csv or ndjson',
  );
  return withUnknownRefusal(
    Type.Object(properties, { additionalProperties: false }),
    unknownSentence(model, properties),
  );
}

/**
 * The parameters of a list's stream (framework/live): the list's filters, or and fields, read by the
 * same parser and compiler as the list's. No paging, sort or search: a stream has no pages. fields
 * names the row's own fields only: a stream carries no expansions (a referenced row changes without
 * an event of the list).
 */
export function streamQuerySchema(model: QueryModel) {
  const properties: TProperties = { ...filterParameters(model, []), or: orParameter() };
  const selectable = ['id', ...model.selectable];
  properties.fields = withRefusal(
    Type.Optional(
      Type.String({
        pattern: namesPattern(selectable),
        description: `Only these fields in each event's row, separated by commas (id is always there): ${selectable.join(', ')}.`,
      }),
    ),
    `fields takes ${selectable.join(', ')}, separated by commas`,
  );
  return withUnknownRefusal(
    Type.Object(properties, { additionalProperties: false }),
    unknownSentence(model, properties),
  );
}

/** The q parameter of a list that searches these fields (none: no q), its description ending with `rest`. */
function searchParameter(searches: readonly string[], rest: string): TProperties {
  if (searches.length === 0) return {};
  return {
    q: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: SEARCH_MAX_LENGTH,
        description: `Search: only rows whose ${searches.join(' or ')} contains this text, ignoring case${rest}`,
      }),
    ),
  };
}

/**
 * The parameters of a list's summary (summary.ts): the list's filters (q, one parameter per
 * field, or) and the summary's own (groupBy, sum, avg, min, max, tz).
 */
export function summaryQuerySchema(model: QueryModel, options: Pick<ListQueryOptions, 'searches'>) {
  const properties: TProperties = searchParameter(options.searches ?? [], ", as the list's q.");
  Object.assign(properties, filterParameters(model, []));
  properties.or = withRefusal(
    Type.Optional(
      Type.String({
        pattern: '^\\(.*\\)$',
        description: "One group of conditions of which at least one holds, as the list's or.",
      }),
    ),
    'or takes one group in parentheses: or=(<field>.<operator>.<value>,and(<field>.<operator>.<value>,...),...)',
  );
  Object.assign(properties, summaryParameters(model));
  return withUnknownRefusal(
    Type.Object(properties, { additionalProperties: false }),
    `a summary of ${model.label} takes ${Object.keys(properties).join(', ')}`,
  );
}

/** The parameters of a read by id: fields and expand. */
export function readQuerySchema(model: QueryModel) {
  const properties = selectionParameters(model, 'answer');
  return withUnknownRefusal(
    Type.Object(properties, { additionalProperties: false }),
    unknownSentence(model, properties),
  );
}

/** `or`: one group of conditions, of which one holds. */
const orParameter = (): TSchema =>
  withRefusal(
    Type.Optional(
      Type.String({
        pattern: '^\\(.*\\)$',
        description: `One group of conditions of which at least one holds: or=(status.eq.open,slaBreached.is.true). Each member is <field>.<operator>.<value> (not. may come before the operator), or and(...) of such members, one level deep; a value holding , ( ) or " is written in double quotes. Members count towards the ${CONDITIONS_MAX} conditions a request may hold.`,
      }),
    ),
    'or takes one group in parentheses: or=(<field>.<operator>.<value>,and(<field>.<operator>.<value>,...),...)',
  );

/** One parameter per filterable field, and per field of each reference's entity (`assignee.displayName`). */
function filterParameters(model: QueryModel, bareEq: readonly string[]): TProperties {
  const out: TProperties = {};
  for (const field of model.fields.values())
    out[field.name] = filterParameter(field, undefined, bareEq.includes(field.name));
  for (const reference of model.references.values()) {
    for (const field of reference.target.fields.values()) {
      const name = `${reference.name}.${field.name}`;
      out[name] = filterParameter(
        { ...field, name },
        `${reference.name} (the ${reference.target.key} its ${reference.field} names; needs ${reference.target.permission})`,
      );
    }
  }
  return out;
}

function selectionParameters(model: QueryModel, what: 'item' | 'answer'): TProperties {
  const references = [...model.references.values()];
  const inside = references.flatMap((r) => [r.name, ...['id', ...r.target.selectable].map((f) => `${r.name}.${f}`)]);
  const selectable = ['id', ...model.selectable, ...inside];
  const out: TProperties = {
    fields: withRefusal(
      Type.Optional(
        Type.String({
          pattern: namesPattern(selectable),
          description: `Only these fields in each ${what}, separated by commas (id is always there): ${selectable.join(', ')}. A reference's field (${references[0] ? `${references[0].name}.id` : 'none here'}) expands the reference and keeps that field inside it.`,
        }),
      ),
      `fields takes ${selectable.join(', ')}, separated by commas`,
    ),
  };
  if (references.length > 0) {
    out.expand = withRefusal(
      Type.Optional(
        Type.String({
          pattern: namesPattern(references.map((r) => r.name)),
          description: `References each ${what} carries as the referenced row, as its own read answers it for the caller, or null: ${references.map((r) => `${r.name} (${r.target.key}, needs ${r.target.permission})`).join(', ')}. Without that permission the request is 403 AUTH_FORBIDDEN. One statement per page for each, whatever the page size.`,
        }),
      ),
      `expand takes ${references.map((r) => r.name).join(', ')}, separated by commas`,
    );
  }
  return out;
}

const unknownSentence = (model: QueryModel, properties: TProperties): string =>
  `${model.label} take ${Object.keys(properties).join(', ')}`;
