import { gatedPage } from './page-model.ts';
import type { FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import { titleCase } from '../../entity/names.ts';
import type { ProblemError } from '../../errors.ts';
import { protectedFieldCheck } from '../../http/register-route.ts';
import { FORM_TOKEN_FIELD } from '../../access/form-token.ts';
import { runApiRoute as run } from '../api-route.ts';
import { registerAdminPage, type AdminPageContext } from '../page.ts';
import { bodyFromForm, type Widget } from './widgets.ts';
import { bodyChecker, describer, done, errorsOf, formProblem, requireForm, type FormErrors } from './form-posts.ts';
import { renderConfirmPage } from './confirm-page.ts';
import type { EntityPages } from './entity-pages.ts';
import { wantsFormAgain } from './form-aids.ts';
import { detailValues } from './references.ts';
import { offersCommand } from '../../operations/command-states.ts';
import type { Row } from './resource-api.ts';
import { publicPageHref } from './public-page-link.ts';
import { isInstant, isoDate } from '../../format.ts';
import { historySection } from './history-pages.ts';

/** A refused form's errors in people's words: each field's from its schema, its posted value and its FieldText. */
export function formErrors(
  pages: EntityPages,
  schema: TSchema | undefined,
  widgets: readonly Widget[],
  posted: Record<string, unknown> | null,
  p: ProblemError,
): FormErrors {
  const body = posted ? bodyFromForm(widgets, posted) : {};
  const required = new Set(widgets.filter((w) => w.required).map((w) => w.name));
  return errorsOf(
    p,
    widgets.map((w) => w.name),
    describer(schema, body, (field) => required.has(field), pages.textOf),
  );
}

/** /new: the create form and its post, through the API's create route (same checks, same problems). */
export function registerNewPages(pages: EntityPages): void {
  const { site, entity, api, base, label, createWidgets } = pages;
  const check = bodyChecker(api.create.schema.body, entity, true);
  const protect = protectedFieldCheck(entity, api.create);
  const newForm = (ctx: AdminPageContext, posted: Record<string, unknown> | null, p?: ProblemError) => {
    const errors = p ? formErrors(pages, api.create.schema.body, createWidgets, posted, p) : undefined;
    return pages.formPage(
      ctx,
      `New ${label.toLowerCase()}`,
      {
        action: `${base}/new`,
        fields: pages.formFields(createWidgets, null, posted, errors?.fields ?? {}, ctx.can),
        submit: `Create ${label.toLowerCase()}`,
        cancel: base,
        ...(pages.revealsSecrets ? { plain: true } : {}),
        ...(errors ? { alert: errors.alert } : {}),
      },
      p?.status,
    );
  };
  registerAdminPage(site, {
    ...gatedPage(pages),
    path: `${base}/new`,
    summary: `New ${label.toLowerCase()}: form`,
    access: api.create.access,
    handler: (ctx) => newForm(ctx, null),
  });
  registerAdminPage(site, {
    ...gatedPage(pages),
    method: 'POST',
    path: `${base}/new`,
    summary: `New ${label.toLowerCase()}: create`,
    access: api.create.access,
    ...(api.create.publishes ? { publishes: api.create.publishes } : {}),
    handler: async (ctx) => {
      requireForm(ctx.request);
      if (wantsFormAgain(ctx.body)) return newForm(ctx, ctx.body);
      const body = { ...pages.createFixed, ...bodyFromForm(createWidgets, ctx.body) };
      await protect?.({ body } as FastifyRequest);
      check(body);
      const row = (await run(api.create, ctx, { body })) as Row;
      return afterSave(pages, ctx, row, 201);
    },
    onError: async (ctx, p) => (formProblem(p) ? newForm(ctx, ctx.body, p) : null),
  });
}

/**
 * The record's page: its fields, links to edit, delete and each command the caller may run here,
 * and, when this answer made a secret (EntityAdmin.shownOnce), that secret shown once. Such
 * an answer is the post's own (no redirect: the value is never in a URL) and marked no-store, so
 * no cache, history or back button shows it again.
 */
export async function renderDetail(
  pages: EntityPages,
  ctx: AdminPageContext,
  row: Row,
  revealed: { label: string; hint: string; value: string }[] = [],
  status?: number,
): Promise<string> {
  const { entity, api, base, label } = pages;
  const fields = pages.shownFields;
  const items = fields.map((field) => ({
    label: pages.labelOf(field),
    value: pages.valueOf(row, field),
    ...(isInstant(row[field]) ? { iso: isoDate(row[field]) } : {}),
  }));
  const csrf = ctx.csrf();
  const title = `${label}: ${pages.titleOf(row)}`;
  if (revealed.length) ctx.reply.header('cache-control', 'no-store');
  return ctx.render({
    title,
    template: './admin/generated/detail',
    ...(status ? { status } : {}),
    data: {
      title,
      // References by their rows' titles, linked; Markdown rendered (references.ts).
      items: await detailValues(ctx, entity, row, [...fields], items),
      revealed: revealed.map((secret, i) => ({ ...secret, id: `revealed-${i}` })),
      back: base,
      backLabel: `All ${pages.labelPlural.toLowerCase()}`,
      editHref: ctx.can(api.update.access) ? pages.href(row.id, '/edit') : '',
      deleteHref: ctx.can(api.remove.access) ? pages.href(row.id, '/delete') : '',
      deleteConfirm: `Delete this ${label.toLowerCase()}?`,
      csrfVals: JSON.stringify({ [FORM_TOKEN_FIELD]: csrf }),
      commands: api.commands
        .filter((c) => ctx.can(c.route.access) && offersCommand(entity, c.name, row))
        .map((c) => ({
          label: entity.def.commands?.[c.name]?.admin?.label ?? titleCase(c.name),
          href: pages.href(row.id, `/${c.name}`),
        })),
      // A published record's public page, where readers see it (public-page-link.ts).
      publicHref: publicPageHref(entity, row) ?? '',
      // Its changes in words, newest first, each with Restore (history-pages.ts); empty without history.
      history: await historySection(pages, ctx, row),
    },
  });
}

/**
 * After a create or a command: the record's page. Normally by 303 (post/redirect/get); when the
 * answer carries a secret shown once, that page is the post's own answer.
 */
export async function afterSave(
  pages: EntityPages,
  ctx: AdminPageContext,
  row: Row,
  status: 200 | 201,
): Promise<string> {
  const revealed = pages.revealed(row);
  if (revealed.length) return renderDetail(pages, ctx, row, revealed, status);
  return done(ctx, pages.href(row.id));
}

/** /<id>: the record, with links to edit, delete and each command the caller may run. */
export function registerDetailPage(pages: EntityPages): void {
  const { site, entity, api, itemPath, label } = pages;
  registerAdminPage(site, {
    ...gatedPage(pages),
    path: itemPath,
    summary: `${label}: detail`,
    access: api.read.access,
    schema: { params: entity.schemas.idParams },
    handler: async (ctx) => renderDetail(pages, ctx, await pages.readRow(ctx)),
  });
}

/** /<id>/edit: the edit form and its post, through the API's PATCH route. */
export function registerEditPages(pages: EntityPages): void {
  const { site, entity, api, itemPath, label, patchWidgets } = pages;
  const check = bodyChecker(api.update.schema.body, entity, true);
  const protect = protectedFieldCheck(entity, api.update);
  const editForm = async (ctx: AdminPageContext, posted: Record<string, unknown> | null, p?: ProblemError) => {
    const row = await pages.readRow(ctx);
    const errors = p ? formErrors(pages, api.update.schema.body, patchWidgets, posted, p) : undefined;
    return pages.formPage(
      ctx,
      `Edit ${label.toLowerCase()}: ${pages.titleOf(row)}`,
      {
        action: pages.href(row.id, '/edit'),
        fields: pages.formFields(patchWidgets, row, posted, errors?.fields ?? {}, ctx.can),
        submit: 'Save changes',
        cancel: pages.href(row.id),
        ...(errors ? { alert: errors.alert } : {}),
      },
      p?.status,
    );
  };
  registerAdminPage(site, {
    ...gatedPage(pages),
    path: `${itemPath}/edit`,
    summary: `${label}: edit form`,
    access: api.update.access,
    schema: { params: entity.schemas.idParams },
    handler: (ctx) => editForm(ctx, null),
  });
  registerAdminPage(site, {
    ...gatedPage(pages),
    method: 'POST',
    path: `${itemPath}/edit`,
    summary: `${label}: update`,
    access: api.update.access,
    schema: { params: entity.schemas.idParams },
    ...(api.update.publishes ? { publishes: api.update.publishes } : {}),
    handler: async (ctx) => {
      requireForm(ctx.request);
      if (wantsFormAgain(ctx.body)) return editForm(ctx, ctx.body);
      const body = bodyFromForm(patchWidgets, ctx.body);
      await protect?.({ body } as FastifyRequest);
      check(body);
      const row = (await run(api.update, ctx, { params: ctx.params, body })) as Row;
      return done(ctx, pages.href(row.id));
    },
    onError: async (ctx, p) => (formProblem(p) ? editForm(ctx, ctx.body, p) : null),
  });
}

/** /<id>/delete: the confirmation and its post, through the API's DELETE route. */
export function registerDeletePages(pages: EntityPages): void {
  const { site, entity, api, base, itemPath, label } = pages;
  const deletePage = async (ctx: AdminPageContext, p?: ProblemError) => {
    const row = await pages.readRow(ctx);
    const title = `Delete ${label.toLowerCase()}: ${pages.titleOf(row)}`;
    return renderConfirmPage(
      ctx,
      title,
      {
        action: pages.href(row.id, '/delete'),
        question: `Delete ${label.toLowerCase()} “${pages.titleOf(row)}”? ${entity.deleteMode === 'hard' ? 'It is removed for good.' : 'It is no longer listed or changed.'}`,
        confirmLabel: `Delete ${label.toLowerCase()}`,
        cancelHref: pages.href(row.id),
      },
      p,
    );
  };
  registerAdminPage(site, {
    ...gatedPage(pages),
    path: `${itemPath}/delete`,
    summary: `${label}: delete confirmation`,
    access: api.remove.access,
    schema: { params: entity.schemas.idParams },
    handler: (ctx) => deletePage(ctx),
  });
  registerAdminPage(site, {
    ...gatedPage(pages),
    method: 'POST',
    path: `${itemPath}/delete`,
    summary: `${label}: delete`,
    access: api.remove.access,
    schema: { params: entity.schemas.idParams },
    ...(api.remove.publishes ? { publishes: api.remove.publishes } : {}),
    handler: async (ctx) => {
      requireForm(ctx.request);
      await run(api.remove, ctx, { params: ctx.params });
      return done(ctx, base);
    },
    onError: async (ctx, p) => (p.status === 409 || p.status === 422 ? deletePage(ctx, p) : null),
  });
}
