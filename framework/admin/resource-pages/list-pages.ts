import type { PageQuery, Page } from '../../operations/paging.ts';
import { runApiRoute as run } from '../api-route.ts';
import { registerAdminPage, type AdminPageContext } from '../page.ts';
import { renderTemplate } from '../render.ts';
import { listColumns, listModel } from './list-model.ts';
import { linkReferenceCells } from './references.ts';
import type { EntityPages } from './entity-pages.ts';
import type { Row } from './resource-api.ts';

/** The list page and its rows fragment (htmx paging and sorting), both through the API's list route. */
export function registerListPages(pages: EntityPages): void {
  const { site, entity, api, base, label, titleField } = pages;
  const { names } = entity;
  const listPage = async (ctx: AdminPageContext, fragmentOnly: boolean) => {
    const page = (await run(api.list, ctx, { query: ctx.query })) as Page<Row>;
    const model = listModel(entity, base, ctx.query as unknown as PageQuery, page, titleField, pages);
    await linkReferenceCells(ctx, entity, listColumns(entity, titleField), page.items, model.table);
    const rows = renderTemplate('./admin/generated/rows', model);
    if (fragmentOnly) return rows;
    const canCreate = ctx.can(api.create.access);
    return ctx.render({
      title: names.labelPlural,
      template: './admin/generated/list',
      data: { title: names.labelPlural, rows, newHref: canCreate ? `${base}/new` : '', newLabel: `New ${label.toLowerCase()}` },
      fragment: rows,
    });
  };
  registerAdminPage(site, {
    path: base,
    summary: `${names.labelPlural}: list`,
    access: api.list.access,
    schema: { querystring: entity.schemas.listQuery },
    handler: (ctx) => listPage(ctx, false),
  });
  registerAdminPage(site, {
    path: `${base}/rows`,
    summary: `${names.labelPlural}: rows of the list (htmx fragment)`,
    access: api.list.access,
    schema: { querystring: entity.schemas.listQuery },
    handler: (ctx) => listPage(ctx, true),
  });
}
