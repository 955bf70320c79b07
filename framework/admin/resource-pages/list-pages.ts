import { gatedPage } from './page-model.ts';
import type { TSchema } from 'typebox';
import type { Page } from '../../operations/paging.ts';
import { entityQueryFields, selectableNames } from '../../operations/entity-query.ts';
import { runApiRoute as run } from '../api-route.ts';
import { registerAdminPage, type AdminPageContext } from '../page.ts';
import { ADMIN_LIST_SORT, csvHref, newestFirst, pagingOf } from '../list-query.ts';
import { ListFilters, entityPicker, type FilterPicker } from '../list-filters.ts';
import { renderTemplate } from '../render.ts';
import { listColumns, listModel } from './list-model.ts';
import { linkReferenceCells } from './references.ts';
import { choiceLabel } from './widgets.ts';
import type { EntityPages } from './entity-pages.ts';
import type { Row } from './resource-api.ts';
import { followsEntity } from '../../live/follows.ts';

/**
 * The list page and its rows fragment (htmx paging, sorting and filtering), both through the API's
 * list route, with the list's filter controls (list-filters.ts) from the entity's filterable fields,
 * "Download CSV" for its current filters and, given `importHref`, a link to its import page.
 */
export function registerListPages(pages: EntityPages, importHref?: string): void {
  const { site, entity, api, base, label, labelPlural, titleField } = pages;
  const filters = listFiltersOf(pages);
  const pageQuery = filters.pageQuery(newestFirst(entity.schemas.listQuery));
  const listPage = async (ctx: AdminPageContext, fragmentOnly: boolean) => {
    const { pairs, changed } = filters.canonical(ctx.query);
    const href = filters.href(pairs);
    // The address holds the API's own parameters: a form's from, to or bare id is written back first.
    if (changed && !fragmentOnly) return ctx.redirect(href);
    if (fragmentOnly) ctx.reply.header('hx-push-url', href);
    // Paging and sort as the page's schema read them (numbers, the newest first by default); the rest as written back.
    const { limit, offset, sort } = ctx.query;
    const query = { ...ListFilters.queryOf(pairs), limit, offset, sort: sort ?? ADMIN_LIST_SORT };
    const page = (await run(api.list, ctx, { query })) as Page<Row>;
    const model = listModel(entity, base, pagingOf(query), page, titleField, pages, ctx.tx.now, {
      filters: ListFilters.filtersOf(pairs),
    });
    await linkReferenceCells(ctx, entity, listColumns(entity, titleField), page.items, model.table);
    const rows = renderTemplate('./admin/generated/rows', model);
    if (fragmentOnly) return rows;
    const canCreate = ctx.can(api.create.access);
    const searchable = entity.searchable.length > 0;
    const form =
      searchable || filters.offersControls
        ? await filters.form(ctx, pairs, {
            rows: `${base}/rows`,
            label: `${searchable ? 'Search and filter' : 'Filter'} ${labelPlural.toLowerCase()}`,
            ...(searchable ? { search: { label: `Search ${labelPlural.toLowerCase()}` } } : {}),
          })
        : null;
    return ctx.render({
      title: labelPlural,
      template: './admin/generated/list',
      data: {
        title: labelPlural,
        rows,
        newHref: canCreate ? `${base}/new` : '',
        // The import route takes the create route's permission.
        importHref: canCreate && importHref ? importHref : '',
        // The list's export (GET <list>?format=csv) with the page's filters, search and sort: every matching row.
        downloadHref: csvHref(entity.names.path, query),
        newLabel: `New ${label.toLowerCase()}`,
        filters: form,
        // Rows others create or change while the page is open are announced, with a way to show them (assets/live.js).
        live: followsEntity(entity)
          ? {
              list: entity.names.operationId('stream'),
              rows: `${base}/rows`,
              one: label.toLowerCase(),
              many: labelPlural.toLowerCase(),
            }
          : null,
      },
      fragment: rows,
    });
  };
  registerAdminPage(site, {
    ...gatedPage(pages),
    path: base,
    summary: `${labelPlural}: list`,
    access: api.list.access,
    schema: { querystring: pageQuery },
    handler: (ctx) => listPage(ctx, false),
  });
  registerAdminPage(site, {
    ...gatedPage(pages),
    path: `${base}/rows`,
    summary: `${labelPlural}: rows of the list (htmx fragment)`,
    access: api.list.access,
    schema: { querystring: pageQuery },
    handler: (ctx) => listPage(ctx, true),
  });
}

/**
 * The filter controls of an entity's list: a control for each of its list's columns the query
 * language filters by (or the fields `admin.filters.fields` names), its references through the
 * picker, and the presets the entity declares (`admin.filters.presets`), checked at boot.
 */
function listFiltersOf(pages: EntityPages): ListFilters {
  const { site, entity, base, titleField } = pages;
  const { fields, sorts } = entityQueryFields(entity);
  const model = {
    label: entity.names.labelPlural.toLowerCase(),
    fields,
    sorts,
    references: new Map(),
    selectable: selectableNames(entity),
  };
  const declared = entity.def.admin?.filters;
  const pickers: Record<string, FilterPicker> = {};
  for (const [field, key] of Object.entries(entity.def.admin?.references ?? {})) {
    const picker = key ? entityPicker(site.services, key) : undefined;
    if (picker) pickers[field] = picker;
  }
  const schemas = (entity.schemas.row as { properties?: Record<string, TSchema> }).properties ?? {};
  return new ListFilters({
    base,
    model,
    fields: declared?.fields ?? listColumns(entity, titleField),
    labelOf: (field) => pages.labelOf(field),
    valueLabel: (field, value) =>
      schemas[field] ? pages.valueOf({ id: '', [field]: value }, field) : choiceLabel(value),
    pickers,
    presets: declared?.presets ?? [],
    defaultSort: ADMIN_LIST_SORT,
  });
}
