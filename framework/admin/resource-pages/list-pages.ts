import Type, { type TSchema } from 'typebox';
import { SEARCH_MAX_LENGTH, type PageQuery, type Page } from '../../operations/paging.ts';
import { runApiRoute as run } from '../api-route.ts';
import { registerAdminPage, type AdminPageContext } from '../page.ts';
import { newestFirst } from '../list-query.ts';
import { renderTemplate } from '../render.ts';
import { listColumns, listModel } from './list-model.ts';
import { linkReferenceCells } from './references.ts';
import type { EntityPages } from './entity-pages.ts';
import type { Row } from './resource-api.ts';

/** The list page and its rows fragment (htmx paging and sorting), both through the API's list route. */
export function registerListPages(pages: EntityPages): void {
  const { site, entity, api, base, label, labelPlural, titleField } = pages;
  const pageQuery = pageQueryOf(entity.schemas.listQuery);
  const listPage = async (ctx: AdminPageContext, fragmentOnly: boolean) => {
    const { q, ...rest } = ctx.query;
    // An emptied search box sends q=: the whole list, as without q.
    const query = typeof q === 'string' && q !== '' ? { ...rest, q } : rest;
    const page = (await run(api.list, ctx, { query })) as Page<Row>;
    const model = listModel(entity, base, query as unknown as PageQuery, page, titleField, pages, ctx.tx.now);
    await linkReferenceCells(ctx, entity, listColumns(entity, titleField), page.items, model.table);
    const rows = renderTemplate('./admin/generated/rows', model);
    if (fragmentOnly) return rows;
    const canCreate = ctx.can(api.create.access);
    return ctx.render({
      title: labelPlural,
      template: './admin/generated/list',
      data: {
        title: labelPlural,
        rows,
        newHref: canCreate ? `${base}/new` : '',
        // The list's export (GET <list>?format=csv) with the page's filters, search and sort: every matching row.
        downloadHref: csvHref(entity.names.path, query),
        newLabel: `New ${label.toLowerCase()}`,
        // The list's q, over its searchable fields: a plain GET form, which htmx leaves alone.
        search:
          entity.searchable.length > 0
            ? {
                action: base,
                q: typeof ctx.query.q === 'string' ? ctx.query.q : '',
                label: `Search ${labelPlural.toLowerCase()}`,
              }
            : null,
      },
      fragment: rows,
    });
  };
  registerAdminPage(site, {
    path: base,
    summary: `${labelPlural}: list`,
    access: api.list.access,
    schema: { querystring: pageQuery },
    handler: (ctx) => listPage(ctx, false),
  });
  registerAdminPage(site, {
    path: `${base}/rows`,
    summary: `${labelPlural}: rows of the list (htmx fragment)`,
    access: api.list.access,
    schema: { querystring: pageQuery },
    handler: (ctx) => listPage(ctx, true),
  });
}

/** Paging says where a page starts; an export sends every row. */
const PAGING = new Set(['limit', 'offset', 'after', 'format']);

/** The API list's CSV export for the page's query: its filters, q and sort, without paging. */
export function csvHref(listPath: string, query: Record<string, unknown>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (PAGING.has(name) || value === undefined || value === '') continue;
    for (const one of [value].flat()) params.append(name, String(one));
  }
  params.set('format', 'csv');
  return `${listPath}?${params}`;
}

/**
 * The list's query as the page takes it: the API's, opening on the newest first (list-query.ts),
 * and taking an empty q (a cleared search box).
 */
function pageQueryOf(listQuery: TSchema): TSchema {
  const newest = newestFirst(listQuery);
  const properties = (newest as { properties?: Record<string, TSchema> }).properties ?? {};
  if (!properties.q) return newest;
  return Type.Object(
    { ...properties, q: Type.Optional(Type.String({ maxLength: SEARCH_MAX_LENGTH })) },
    { additionalProperties: false },
  );
}
