import Type, { type TProperties, type TSchema } from 'typebox';
import type { QueryField, QueryModel } from '../query/query-model.ts';
import { parseListQuery } from '../query/parse.ts';
import { PAGE_LIMIT_DEFAULT, SEARCH_MAX_LENGTH } from '../operations/page-query.ts';
import { formatDateTime } from '../format.ts';
import { titleCase } from '../entity/names.ts';
import { choiceLabel, toDateTimeLocal } from './resource-pages/widgets.ts';
import type { AdminPageContext } from './page.ts';
import type { Services } from '../contracts/services.ts';
import { entitiesWithPages, pickerFor, referenceTarget } from './resource-pages/references.ts';

/**
 * A list page's filter controls (templates/admin/components/filters.eta), one component for every
 * admin list, generated or hand-written, built once at boot from the list's query model
 * (framework/query/query-model.ts): an enum as a select of its values, a boolean as yes / no /
 * either, a date-time as from and to, a reference through the picker's options. It is a plain GET
 * form to the list page; the page keeps only the API's own parameters in its address:
 *
 * - a select's option is the parameter as the API takes it (`status=eq.open`, `slaBreached=is.true`);
 * - what a form cannot write in that syntax is written back in it (`canonical`): from and to
 *   (`deadline-from=2026-12-01T09:00` → `deadline=gte.2026-12-01T09:00:00Z`), a picker's bare id
 *   (→ `eq.<id>`), and an empty choice (left out). A page that receives any of these sends the
 *   browser to the address in the API's syntax (303), and a rows fragment asked by htmx pushes
 *   that address (HX-Push-Url), so the address bar always holds a shareable list query;
 * - the list route reads the address through its own parser, so the page filters exactly as the
 *   API does, and a value the parser refuses is the API's 422 in words.
 *
 * Conditions the controls cannot show (`deadline=lt.now`, a preset's, one typed into the
 * address) are shown as ticked boxes in words under "Also", so they survive the next submit and
 * can be dropped. Presets (`admin.filterPresets` of an entity) are links to their query.
 */

export interface FilterPreset {
  /** What a person reads: "Overdue and not resolved". */
  readonly label: string;
  /** The list's parameters in the API's syntax, filters and optionally `sort`. */
  readonly query: Readonly<Record<string, string>>;
}

/** A reference field's picker: its options for this caller (undefined: the caller cannot list them). */
export type FilterPicker = (
  ctx: AdminPageContext,
  selected: string,
) => Promise<{ options: { value: string; label: string }[] } | undefined>;

export interface ListFiltersDeclaration {
  /** The list page's path: the form's action and the address its query lands on. */
  readonly base: string;
  /** The list's query model: the fields its route filters by. */
  readonly model: QueryModel;
  /** The fields to offer a control for, in order; a field the model does not filter by, or of a kind no control shows, is skipped. */
  readonly fields: readonly string[];
  /** A field's label for people (fieldText). */
  labelOf(field: string): string;
  /** An enumerated value's label for people; default its words (in_progress → In progress). */
  valueLabel?(field: string, value: string): string;
  /** Reference fields' pickers, by field. */
  readonly pickers?: Readonly<Record<string, FilterPicker>>;
  readonly presets?: readonly FilterPreset[];
  /** The order the page opens in (left out of its addresses). */
  readonly defaultSort: string;
  /** The page's default size (left out of its addresses). */
  readonly defaultLimit?: number;
}

type ControlKind = 'enum' | 'boolean' | 'range' | 'reference';

interface ControlSpec {
  readonly field: QueryField;
  readonly kind: ControlKind;
  readonly label: string;
}

export interface FilterOption {
  value: string;
  label: string;
  selected: boolean;
}

export type FilterControl =
  | { kind: 'select'; id: string; name: string; label: string; options: FilterOption[] }
  | {
      kind: 'range';
      id: string;
      label: string;
      input: 'datetime-local' | 'date';
      from: { id: string; name: string; value: string };
      to: { id: string; name: string; value: string };
    };

/** What templates/admin/components/filters.eta takes. */
export interface FilterForm {
  action: string;
  /** The rows fragment htmx asks with the form's values; none: the form loads the page. */
  rows?: string;
  label: string;
  search?: { label: string; q: string };
  controls: FilterControl[];
  /** Conditions no control shows, in words, each a ticked box of its parameter. */
  kept: { id: string; name: string; value: string; label: string }[];
  presets: { label: string; href: string; current: boolean }[];
  /** Parameters the form carries unchanged: sort and page size (and q, when the search box is another form's). */
  hidden: { name: string; value: string }[];
  /** Whether the list is filtered or searched now: a link shows the whole list. */
  filtered: boolean;
}

/** A list query as the page's address holds it: the API's parameters, each value as written. */
export type QueryPairs = [string, string][];

const FROM = '-from';
const TO = '-to';
/** Parameters of the page that are no filter: they are carried as they are. */
const PAGING = new Set(['limit', 'offset', 'after', 'sort', 'q']);
const ABSOLUTE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2}))?$/i;
const LOCAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/;
const DAY = /^\d{4}-\d{2}-\d{2}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const VALUE_MAX = 1000;

const controlKind = (field: QueryField, picker: boolean): ControlKind | undefined => {
  switch (field.type.kind) {
    case 'enum':
      return 'enum';
    case 'boolean':
      return 'boolean';
    case 'dateTime':
    case 'date':
      return 'range';
    case 'uuid':
      return picker ? 'reference' : undefined;
    default:
      return undefined;
  }
};

const values = (raw: unknown): string[] =>
  raw === undefined || raw === null ? [] : (Array.isArray(raw) ? raw : [raw]).map((v) => String(v));

export class ListFilters {
  private readonly declaration: ListFiltersDeclaration;
  private readonly controls: readonly ControlSpec[];
  private readonly byName: ReadonlyMap<string, ControlSpec>;
  /** The page's own parameters (pageQuery's extra): neither filters nor kept in its addresses. */
  private pageOnly = new Set<string>();

  constructor(declaration: ListFiltersDeclaration) {
    this.declaration = declaration;
    const controls: ControlSpec[] = [];
    for (const name of declaration.fields) {
      const field = declaration.model.fields.get(name);
      const kind = field && controlKind(field, declaration.pickers?.[name] !== undefined);
      if (field && kind) controls.push({ field, kind, label: declaration.labelOf(name) });
    }
    this.controls = controls;
    this.byName = new Map(controls.map((c) => [c.field.name, c]));
    // A preset that the list's own parser refuses fails the start, not the first person who clicks it.
    for (const preset of declaration.presets ?? []) {
      const { sort: _sort, ...filters } = preset.query;
      try {
        parseListQuery(declaration.model, filters, new Date(0));
      } catch (err) {
        throw new Error(
          `${declaration.base}: filter preset "${preset.label}" is no query of the list: ${(err as Error).message}`,
        );
      }
    }
  }

  /** Whether the page shows a form at all: controls, presets or a search. */
  get offersControls(): boolean {
    return this.controls.length > 0 || (this.declaration.presets?.length ?? 0) > 0;
  }

  /**
   * The page's query string: the list route's, where a control's field also takes what the form
   * sends before it is written back (an empty choice, a bare id), and each date's from and to;
   * `extra`: the page's own parameters besides (a notice after a post).
   */
  pageQuery(listQuery: TSchema, extra: TProperties = {}): TSchema {
    const object = listQuery as { properties?: TProperties };
    const properties: TProperties = { ...object.properties, ...extra };
    for (const name of Object.keys(extra)) this.pageOnly.add(name);
    const text = Type.String({ maxLength: VALUE_MAX });
    for (const { field, kind } of this.controls) {
      properties[field.name] = Type.Optional(Type.Union([text, Type.Array(text, { maxItems: 20 })]));
      if (kind === 'range') {
        properties[`${field.name}${FROM}`] = Type.Optional(Type.String({ maxLength: 40 }));
        properties[`${field.name}${TO}`] = Type.Optional(Type.String({ maxLength: 40 }));
      }
    }
    if (properties.q) properties.q = Type.Optional(Type.String({ maxLength: SEARCH_MAX_LENGTH }));
    return Type.Object(properties, { additionalProperties: false });
  }

  /**
   * The request's query in the API's syntax, in a stable order (filters as the controls list
   * them, then the others, then q, sort, limit, offset, after), without the page's defaults; and
   * whether the form sent anything the API would not take as it is (then the page moves the
   * browser to the written-back address).
   */
  canonical(query: Readonly<Record<string, unknown>>): { pairs: QueryPairs; changed: boolean } {
    let changed = false;
    const filters = new Map<string, string[]>();
    const add = (name: string, value: string) => filters.set(name, [...(filters.get(name) ?? []), value]);
    for (const { field } of this.controls) filters.set(field.name, []);
    for (const [name, raw] of Object.entries(query)) {
      if (PAGING.has(name) || this.pageOnly.has(name)) continue;
      const range = name.endsWith(FROM) ? FROM : name.endsWith(TO) ? TO : undefined;
      const spec = range ? this.byName.get(name.slice(0, -range.length)) : undefined;
      if (range && spec?.kind === 'range') {
        changed = true;
        for (const value of values(raw)) {
          const written = instantOf(value.trim(), spec.field.type.kind === 'date');
          if (written) add(spec.field.name, `${range === FROM ? 'gte' : 'lte'}.${written}`);
        }
        continue;
      }
      const control = this.byName.get(name);
      for (const value of values(raw)) {
        if (control && value.trim() === '') {
          changed = true;
        } else if (control && !/[.(]/.test(value)) {
          // A picker's option is the row's id, as the shared picker gives it: eq.<id>.
          changed = true;
          add(name, `eq.${value.trim()}`);
        } else add(name, value);
      }
    }
    const pairs: QueryPairs = [];
    for (const [name, written] of filters) for (const value of written) pairs.push([name, value]);
    const q = typeof query.q === 'string' ? query.q : undefined;
    if (q !== undefined && q !== '') pairs.push(['q', q]);
    const sort = query.sort;
    if (typeof sort === 'string' && sort !== '' && sort !== this.declaration.defaultSort) pairs.push(['sort', sort]);
    const limit = query.limit;
    if (limit !== undefined && limit !== '' && Number(limit) !== (this.declaration.defaultLimit ?? PAGE_LIMIT_DEFAULT))
      pairs.push(['limit', String(limit)]);
    if (query.offset !== undefined && Number(query.offset) > 0) pairs.push(['offset', String(query.offset)]);
    if (typeof query.after === 'string' && query.after !== '') pairs.push(['after', query.after]);
    return { pairs, changed };
  }

  /** The list route's query from the page's: the written-back pairs, a repeated parameter as a list. */
  static queryOf(pairs: QueryPairs): Record<string, string | string[]> {
    const out: Record<string, string | string[]> = {};
    for (const [name, value] of pairs) {
      const had = out[name];
      out[name] = had === undefined ? value : [...(Array.isArray(had) ? had : [had]), value];
    }
    return out;
  }

  /** The filters among the pairs (no paging, search or sort): what every link of the page keeps. */
  static filtersOf(pairs: QueryPairs): QueryPairs {
    return pairs.filter(([name]) => !PAGING.has(name));
  }

  /**
   * A list page's request as its handler reads it: the written-back pairs and whether the form
   * sent anything to write back (then the page answers `redirect(href)`), the list route's query
   * (paging and sort as the page's schema read them, the rest as written back), and the next
   * page's address, which keeps the filters, q and sort its cursor was given under; for a list
   * with sortable columns, each column's sort link, and the first page's address.
   */
  request(ctx: AdminPageContext): {
    pairs: QueryPairs;
    changed: boolean;
    href: string;
    query: Record<string, unknown>;
    nextHref(next: string | null): string | null;
    sortHref(field: string): string;
    firstHref: string | null;
  } {
    const { pairs, changed } = this.canonical(ctx.query);
    const { limit, offset, sort } = ctx.query;
    const kept = pairs.filter(([name]) => name !== 'after' && name !== 'offset');
    const current = typeof sort === 'string' && sort !== '' ? sort : this.declaration.defaultSort;
    // A new order starts at the first page: a cursor or an offset holds only under the order it was given.
    const fromTheStart = (changes: Record<string, unknown>) =>
      this.href(this.canonical({ ...ctx.query, ...changes, after: undefined, offset: undefined }).pairs);
    const paged = (typeof ctx.query.after === 'string' && ctx.query.after !== '') || Number(offset ?? 0) > 0;
    return {
      // A column sorted ascending by its field sorts descending; any other, ascending.
      sortHref: (field) => fromTheStart({ sort: current === field ? `-${field}` : field }),
      firstHref: paged ? fromTheStart({}) : null,
      pairs,
      changed,
      href: this.href(pairs),
      query: {
        ...ListFilters.queryOf(pairs),
        ...(limit !== undefined ? { limit } : {}),
        ...(offset !== undefined ? { offset } : {}),
        sort: sort ?? this.declaration.defaultSort,
      },
      nextHref: (next) => (next === null ? null : this.href([...kept, ['after', next]])),
    };
  }

  /** An address of the list page with these pairs. */
  href(pairs: QueryPairs): string {
    const search = new URLSearchParams(pairs).toString();
    return search ? `${this.declaration.base}?${search}` : this.declaration.base;
  }

  /** The form for a request's written-back query. */
  async form(
    ctx: AdminPageContext,
    pairs: QueryPairs,
    options: { rows?: string; label: string; search?: { label: string } },
  ): Promise<FilterForm> {
    const { declaration } = this;
    const byField = new Map<string, string[]>();
    for (const [name, value] of ListFilters.filtersOf(pairs)) byField.set(name, [...(byField.get(name) ?? []), value]);
    const shown = new Set<string>();
    const controls: FilterControl[] = [];
    for (const spec of this.controls) {
      const control = await this.control(ctx, spec, byField.get(spec.field.name) ?? [], shown);
      if (control) controls.push(control);
    }
    const kept: FilterForm['kept'] = [];
    for (const [name, value] of ListFilters.filtersOf(pairs)) {
      const key = `${name}=${value}`;
      if (shown.has(key)) continue;
      shown.add(key);
      kept.push({ id: `filter-kept-${kept.length + 1}`, name, value, label: this.words(name, value) });
    }
    const filters = ListFilters.filtersOf(pairs);
    const sameFilters = (other: QueryPairs) => {
      const a = filters.map(([n, v]) => `${n}=${v}`).sort();
      const b = other.map(([n, v]) => `${n}=${v}`).sort();
      return a.length === b.length && a.every((x, i) => x === b[i]);
    };
    const get = (name: string) => pairs.find(([n]) => n === name)?.[1];
    const q = get('q') ?? '';
    return {
      action: declaration.base,
      ...(options.rows ? { rows: options.rows } : {}),
      label: options.label,
      ...(options.search ? { search: { label: options.search.label, q } } : {}),
      controls,
      kept,
      presets: (declaration.presets ?? []).map((preset) => {
        const query = Object.entries(preset.query) as QueryPairs;
        return {
          label: preset.label,
          href: this.href(query),
          current: sameFilters(ListFilters.filtersOf(query)) && (preset.query.sort ?? undefined) === get('sort'),
        };
      }),
      // A form without the search box keeps the page's search through filtering.
      hidden: pairs
        .filter(([name]) => name === 'sort' || name === 'limit' || (name === 'q' && !options.search))
        .map(([name, value]) => ({ name, value })),
      filtered: filters.length > 0 || q !== '',
    };
  }

  /** One control with what the query holds for its field; `shown` collects the conditions it shows. */
  private async control(
    ctx: AdminPageContext,
    spec: ControlSpec,
    written: readonly string[],
    shown: Set<string>,
  ): Promise<FilterControl | undefined> {
    const { field, kind, label } = spec;
    const name = field.name;
    const id = `filter-${name}`;
    const one = written.length === 1 ? written[0]! : undefined;
    const show = (value: string) => shown.add(`${name}=${value}`);
    if (kind === 'range') {
      let from = '';
      let to = '';
      for (const value of written) {
        const [op, rest] = splitOp(value);
        if (op === 'gte' && from === '' && ABSOLUTE.test(rest)) {
          from = field.type.kind === 'date' ? rest.slice(0, 10) : toDateTimeLocal(rest);
          show(value);
        } else if (op === 'lte' && to === '' && ABSOLUTE.test(rest)) {
          to = field.type.kind === 'date' ? rest.slice(0, 10) : toDateTimeLocal(rest);
          show(value);
        }
      }
      return {
        kind: 'range',
        id,
        label,
        input: field.type.kind === 'date' ? 'date' : 'datetime-local',
        from: { id: `${id}-from`, name: `${name}${FROM}`, value: from },
        to: { id: `${id}-to`, name: `${name}${TO}`, value: to },
      };
    }
    const options: FilterOption[] = [];
    const option = (value: string, text: string) => {
      const selected = one === value;
      if (selected) show(value);
      options.push({ value, label: text, selected });
    };
    if (kind === 'enum') {
      option('', 'Any');
      for (const value of field.type.values ?? []) option(`eq.${value}`, this.valueLabel(name, value));
      if (field.type.nullable) option('is.null', 'None');
      // Another single condition (a preset's not.in.(resolved,closed)) as the values it lets through.
      if (one !== undefined && !options.some((o) => o.selected)) {
        const through = (field.type.values ?? []).filter((v) => enumHolds(field, one, v));
        const [op] = splitOp(one);
        if (op !== undefined && op !== 'is' && through.length > 0) {
          options.push({ value: one, label: listWords(through.map((v) => this.valueLabel(name, v))), selected: true });
          show(one);
        }
      }
    } else if (kind === 'boolean') {
      option('', 'Either');
      option('is.true', 'Yes');
      option('is.false', 'No');
    } else {
      const picker = this.declaration.pickers?.[name];
      const chosen = one?.startsWith('eq.') && UUID.test(one.slice(3)) ? one.slice(3) : '';
      const offered = picker ? await picker(ctx, chosen) : undefined;
      if (!offered) return undefined;
      option('', 'Anyone');
      if (field.type.nullable) {
        option('is.null', 'Nobody');
        option('not.is.null', 'Someone');
      }
      for (const row of offered.options) {
        const selected = row.value === chosen;
        if (selected) show(`eq.${chosen}`);
        options.push({ value: row.value, label: row.label, selected });
      }
    }
    return { kind: 'select', id, name, label, options };
  }

  private valueLabel(field: string, value: string): string {
    return this.declaration.valueLabel?.(field, value) ?? choiceLabel(value);
  }

  /** A condition in words, for the "Also" boxes: its field's label, then what it asks. */
  private words(name: string, written: string): string {
    if (name === 'or') return 'Any of several conditions';
    const field = this.declaration.model.fields.get(name);
    const dot = name.indexOf('.');
    const reference = dot > 0 ? this.declaration.model.references.get(name.slice(0, dot)) : undefined;
    const label = field
      ? this.declaration.labelOf(name)
      : reference
        ? `${this.declaration.labelOf(reference.field)}, ${titleCase(name.slice(dot + 1)).toLowerCase()}`
        : name
            .split('.')
            .map((part, i) => (i === 0 ? titleCase(part) : titleCase(part).toLowerCase()))
            .join(', ');
    const negated = written.startsWith('not.');
    const [op, rest] = splitOp(negated ? written.slice(4) : written);
    const type = field?.type ?? reference?.target.fields.get(name.slice(dot + 1))?.type;
    const value = (text: string) => valueWords(type?.kind, text, (v) => this.valueLabel(name, v));
    const not = negated ? 'not ' : '';
    switch (op) {
      case 'is':
        return `${label}: ${negated ? 'not ' : ''}${rest === 'null' ? 'empty' : rest === 'true' ? 'yes' : 'no'}`;
      case 'eq':
        return `${label}: ${not}${value(rest)}`;
      case 'neq':
        return `${label}: ${negated ? '' : 'not '}${value(rest)}`;
      case 'in':
        return `${label}: ${negated ? 'none of' : 'one of'} ${rest
          .replace(/^\(|\)$/g, '')
          .split(',')
          .map((v) => value(v.replace(/^"|"$/g, '')))
          .join(', ')}`;
      case 'contains':
        return `${label}: ${negated ? 'does not contain' : 'contains'} “${rest}”`;
      case 'startsWith':
        return `${label}: ${negated ? 'does not start' : 'starts'} with “${rest}”`;
      case 'lt':
      case 'lte':
      case 'gt':
      case 'gte': {
        const dated = type?.kind === 'dateTime' || type?.kind === 'date';
        const words = dated
          ? { lt: 'before', lte: 'until', gt: 'after', gte: 'from' }
          : { lt: 'less than', lte: 'at most', gt: 'more than', gte: 'at least' };
        return `${label}: ${not}${words[op]} ${value(rest)}`;
      }
      default:
        return `${label}: a condition`;
    }
  }
}

/** `gte.2026-…` → ['gte', '2026-…']. */
function splitOp(written: string): [string | undefined, string] {
  const dot = written.indexOf('.');
  return dot > 0 ? [written.slice(0, dot), written.slice(dot + 1)] : [undefined, written];
}

/** A from or to as the API writes an instant (UTC, as the shell shows times), or undefined for an unreadable one. */
function instantOf(value: string, dateOnly: boolean): string | undefined {
  if (value === '') return undefined;
  if (dateOnly) return DAY.test(value) ? value : undefined;
  if (LOCAL.test(value)) return `${value.length === 16 ? `${value}:00` : value}Z`;
  if (DAY.test(value)) return `${value}T00:00:00Z`;
  return undefined;
}

/** Whether an enum value meets one condition as written (eq, neq, in, gt..lte, each after not.). */
function enumHolds(field: QueryField, written: string, value: string): boolean {
  const negated = written.startsWith('not.');
  const [op, rest] = splitOp(negated ? written.slice(4) : written);
  const order = field.type.values ?? [];
  const at = (v: string) => order.indexOf(v);
  let holds: boolean;
  switch (op) {
    case 'eq':
      holds = value === rest;
      break;
    case 'neq':
      holds = value !== rest;
      break;
    case 'in':
      holds = rest
        .replace(/^\(|\)$/g, '')
        .split(',')
        .map((v) => v.replace(/^"|"$/g, ''))
        .includes(value);
      break;
    case 'gt':
      holds = at(value) > at(rest);
      break;
    case 'gte':
      holds = at(value) >= at(rest);
      break;
    case 'lt':
      holds = at(value) < at(rest);
      break;
    case 'lte':
      holds = at(value) <= at(rest);
      break;
    default:
      return false;
  }
  return negated ? !holds : holds;
}

/** "Open, Acknowledged or In progress". */
function listWords(items: readonly string[]): string {
  return items.length > 1 ? `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}` : (items[0] ?? '');
}

const UNITS: Record<string, [string, string]> = { m: ['minute', 'minutes'], h: ['hour', 'hours'], d: ['day', 'days'] };

/** A value of a condition in words: an instant as the shell writes one, now and its offsets, a choice by its label. */
function valueWords(kind: string | undefined, text: string, label: (value: string) => string): string {
  const relative = /^now(?:([+-])(\d{1,6})([mhd]))?$/.exec(text.replaceAll(' ', '+'));
  if (relative) {
    if (!relative[1]) return 'now';
    const n = Number(relative[2]);
    const unit = UNITS[relative[3]!]![n === 1 ? 0 : 1];
    return relative[1] === '-' ? `${n} ${unit} ago` : `${n} ${unit} from now`;
  }
  if ((kind === 'dateTime' || kind === 'date') && ABSOLUTE.test(text)) {
    const date = new Date(text.replaceAll(' ', '+'));
    if (!Number.isNaN(date.getTime())) return formatDateTime(date);
  }
  if (kind === 'enum') return label(text);
  if (kind === 'boolean') return text === 'true' ? 'yes' : 'no';
  if (kind === 'uuid') return 'a chosen record';
  return `“${text}”`;
}

/**
 * The picker of a field naming a row of the entity with this key (`webhook.endpoint`): its rows by
 * title as the caller may list them (the shared picker's, at most PICKER_SIZE, the chosen one
 * kept), each option's value the row's id. Undefined for a key with no list.
 */
export function entityPicker(services: Services, key: string): FilterPicker | undefined {
  const target = referenceTarget(services, key, entitiesWithPages(services));
  if (!target) return undefined;
  return async (ctx, selected) => {
    const picker = await pickerFor(ctx, target, { selected, q: undefined });
    return picker && { options: picker.options };
  };
}
