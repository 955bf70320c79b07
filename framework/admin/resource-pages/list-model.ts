import type { ResolvedEntity } from '../../entity/resolve.ts';
import { OFFSET_MAX, PAGE_LIMIT_DEFAULT, type Page, type PageQuery } from '../../operations/paging.ts';
import { ADMIN_LIST_SORT } from '../list-query.ts';
import { peopleLabels } from '../labels.ts';
import { isInstant, isoDate } from '../../format.ts';

type Row = Record<string, unknown> & { id: string };

/** How a list names its columns and prints its cells (the entity's FieldText labels, enumerated values by label). */
export interface ListText {
  labelOf(field: string): string;
  valueOf(row: Row, field: string): string;
}

/** A list's columns, in order: the admin columns (else the first five fields), the title first when not among them. */
export function listColumns(entity: ResolvedEntity, titleField: string): string[] {
  const columns = [...(entity.def.admin?.columns ?? entity.fields.slice(0, 5))];
  if (!columns.includes(titleField)) columns.unshift(titleField);
  return columns;
}

/**
 * The table and pager of a generated list (templates/admin/components/table.eta and pager.eta)
 * from the list route's own answer and parameters: sort links flip the direction of the sorted
 * column, paging goes by offset and, past the deepest offset, by the `next` cursor.
 */
export function listModel(
  entity: ResolvedEntity,
  base: string,
  query: PageQuery,
  page: Page<Row>,
  titleField: string,
  text: ListText,
  /** The page's transaction time: what "overdue" is judged at. */
  now: Date,
  /** The list's filters as the page's address writes them (list-filters.ts): kept by every sort and paging link. */
  options: { filters?: readonly (readonly [string, string])[] } = {},
) {
  const filters = options.filters ?? [];
  const columns = listColumns(entity, titleField);
  const { labelPlural } = peopleLabels(entity);
  // Links leave out the order the page opens in (list-query.ts), as they leave out the default size.
  const defaultSort = ADMIN_LIST_SORT;
  const params = (changes: Record<string, string | number | undefined>) => {
    const values: Record<string, string | number | undefined> = {
      sort: query.sort === defaultSort ? undefined : query.sort,
      limit: query.limit === PAGE_LIMIT_DEFAULT ? undefined : query.limit,
      // A search stays on through sorting and paging.
      q: query.q,
      ...changes,
    };
    const search = new URLSearchParams();
    const set = (key: string, value: string | number | undefined) => {
      if (value !== undefined && value !== 0) search.set(key, String(value));
    };
    for (const key of ['sort', 'limit', 'q'] as const) set(key, values[key]);
    // Filters stay on through sorting and paging too, each as written (a repeated one repeated).
    for (const [key, value] of filters) search.append(key, value);
    for (const [key, value] of Object.entries(values))
      if (key !== 'sort' && key !== 'limit' && key !== 'q') set(key, value);
    const text = search.toString();
    return text ? `?${text}` : '';
  };
  const link = (changes: Record<string, string | number | undefined>) => ({
    href: `${base}${params(changes)}`,
    hx: `${base}/rows${params(changes)}`,
  });

  const tableColumns = columns.map((field) => {
    if (!entity.sortable.includes(field)) return { label: text.labelOf(field) };
    const sorted = query.sort === field ? 'ascending' : query.sort === `-${field}` ? 'descending' : undefined;
    const target = link({ sort: sorted === 'ascending' ? `-${field}` : field, offset: undefined, after: undefined });
    return { label: text.labelOf(field), sortHref: target.href, sortHx: target.hx, ...(sorted ? { sorted } : {}) };
  });
  const overdueField = entity.def.admin?.overdue?.field;
  const rows = page.items.map((row) => {
    const overdue = overdueField !== undefined && isOverdue(entity, row, now);
    return {
      ...(overdue ? { overdue: true } : {}),
      cells: columns.map((field): ListCell => {
        const value = text.valueOf(row, field);
        if (field === titleField)
          return { text: value || row.id, href: `${base}/${encodeURIComponent(row.id)}`, title: true };
        const instant = row[field];
        return {
          text: value,
          // A date reads as words and says itself to machines in <time datetime>.
          ...(isInstant(instant) && value !== '' ? { iso: isoDate(instant) } : {}),
          ...(overdue && field === overdueField ? { flag: 'Overdue' } : {}),
        };
      }),
    };
  });

  const first = page.items.length ? page.offset + 1 : 0;
  const last = page.offset + page.items.length;
  const paged = query.after !== undefined;
  // An empty list says so once, in the table; the pager then has nothing to count.
  const summary = page.items.length
    ? paged
      ? `${page.items.length} ${labelPlural.toLowerCase()} of ${page.total}${page.totalExact ? '' : '+'}`
      : `${first}–${last} of ${page.total}${page.totalExact ? '' : '+'}`
    : '';
  const nextOffset = page.offset + page.limit;
  const next =
    page.next === null
      ? undefined
      : !paged && nextOffset <= OFFSET_MAX
        ? link({ offset: nextOffset })
        : link({ after: page.next });
  // A page past the end (rows removed since its link was made, an address typed) is empty while the
  // list is not: it says so, and its way back is the last page, not one page back into more nothing.
  const pastEnd = page.items.length === 0 && page.total > 0;
  const lastOffset = page.totalExact
    ? Math.floor((page.total - 1) / page.limit) * page.limit
    : page.offset - page.limit;
  const back = pastEnd ? Math.min(lastOffset, page.offset - page.limit) : page.offset - page.limit;
  const prev = !paged && page.offset > 0 ? link({ offset: Math.max(0, back) }) : undefined;
  const filtered = filters.length > 0 || query.q;
  return {
    table: {
      caption: `${labelPlural}, ${orderWords(query.sort, text)}`,
      columns: tableColumns,
      rows,
      empty: pastEnd
        ? `This page is past the end of the list: ${page.total}${page.totalExact ? '' : '+'} ${labelPlural.toLowerCase()}${
            filtered ? ' match these filters' : ' in all'
          }.`
        : filtered
          ? `No ${labelPlural.toLowerCase()} match these filters.`
          : `No ${labelPlural.toLowerCase()} yet.`,
      target: '#rows',
    },
    pager: { summary, target: '#rows', ...(prev ? { prev } : {}), ...(next ? { next } : {}) },
  };
}

/** One cell of a list: its text, a link (the title), the ISO form of a date, and a flag said beside it ("Overdue"). */
export interface ListCell {
  text: string;
  href?: string;
  /** The row's title: it heads the row's card on a phone. */
  title?: boolean;
  iso?: string;
  flag?: string;
}

/**
 * Whether a row is overdue (EntityAdmin.overdue): its declared instant has passed at `now` (the
 * page's transaction time) and its state is none of those that stop the clock.
 */
export function isOverdue(entity: ResolvedEntity, row: Row, now: Date): boolean {
  const declared = entity.def.admin?.overdue;
  if (!declared) return false;
  const due = row[declared.field];
  if (!isInstant(due) || new Date(due).getTime() > now.getTime()) return false;
  const stateField = entity.def.states?.field;
  const state = stateField === undefined ? undefined : row[stateField];
  return !(typeof state === 'string' && (declared.except ?? []).includes(state));
}

/** A list's order as its caption says it: by creation "newest first" or "oldest first", else by the column's label. */
function orderWords(sort: string, text: ListText): string {
  const field = sort.replace(/^-/, '');
  const descending = sort.startsWith('-');
  if (field === 'createdAt') return descending ? 'newest first' : 'oldest first';
  return `sorted by ${text.labelOf(field).toLowerCase()}${descending ? ' (descending)' : ''}`;
}
