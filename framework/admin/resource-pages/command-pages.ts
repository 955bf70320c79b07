import { gatedPage } from './page-model.ts';
import { titleCase } from '../../entity/names.ts';
import type { ProblemError } from '../../errors.ts';
import { prepareApiRoute, runApiRoute as run } from '../api-route.ts';
import { registerAdminPage, type AdminPageContext, type AdminPrepareContext } from '../page.ts';
import { bodyFromForm, inputValue, widgetsOf } from './widgets.ts';
import { bodyChecker, describer, errorsOf, formProblem, requireForm } from './form-posts.ts';
import { afterSave } from './record-pages.ts';
import type { EntityPages, FieldModel } from './entity-pages.ts';
import { wantsFormAgain } from './form-aids.ts';
import type { Row } from './resource-api.ts';
import { commandActors } from './references.ts';

/** /<id>/<command>: one form per command that runs in the page's transaction, and its post, through the command's route. */
export function registerCommandPages(pages: EntityPages): void {
  const { site, entity, api, itemPath, label } = pages;
  for (const command of api.commands) {
    const definition = entity.def.commands![command.name]!;
    // A body field's text: the command's own, else the entity field of the same name (assign's assigneeId).
    const textOf = (field: string) => definition.admin?.fields?.[field] ?? pages.textOf(field);
    const widgets = widgetsOf(command.body, textOf);
    const check = bodyChecker(command.body, entity, false);
    const commandLabel = definition.admin?.label ?? titleCase(command.name);
    const required = new Set(widgets.filter((w) => w.required).map((w) => w.name));
    const actors = commandActors(site.services.registry, entity, command.name);
    const step = command.route.beforeTransaction !== undefined;
    /** The command's body from the form as posted, checked as the API checks it. */
    const bodyOf = (posted: Record<string, unknown>) => {
      const body = command.body ? bodyFromForm(widgets, posted) : undefined;
      if (body !== undefined) check(body);
      return body;
    };
    const commandForm = async (ctx: AdminPageContext, posted: Record<string, unknown> | null, p?: ProblemError) => {
      const row = await pages.readRow(ctx);
      const body = posted ? bodyFromForm(widgets, posted) : {};
      const errors = p
        ? errorsOf(
            p,
            widgets.map((w) => w.name),
            describer(command.body, body, (field) => required.has(field), textOf),
          )
        : undefined;
      const fields: FieldModel[] = widgets.map((widget) => {
        const source = posted?.[widget.name];
        const value = Array.isArray(source) ? source[source.length - 1] : source;
        const checked = widget.kind === 'checkbox' ? value === 'true' : undefined;
        return {
          readonly: false,
          label: widget.label,
          value: inputValue(widget, value),
          widget: {
            ...widget,
            id: `field-${widget.name}`,
            ...(errors?.fields[widget.name] ? { error: errors.fields[widget.name] } : {}),
            ...(checked !== undefined ? { checked } : {}),
          },
        };
      });
      return pages.formPage(
        ctx,
        `${commandLabel}: ${pages.titleOf(row)}`,
        {
          action: pages.href(row.id, `/${command.name}`),
          // The description is the API's (codes, events); people read the command's intro, else its summary.
          intro: definition.admin?.intro ?? definition.summary,
          fields,
          submit: commandLabel,
          cancel: pages.href(row.id),
          ...(definition.references ? { references: definition.references } : {}),
          ...(pages.revealsSecrets ? { plain: true } : {}),
          ...(definition.actors ? { actors } : {}),
          ...(errors ? { alert: errors.alert } : {}),
        },
        p?.status,
      );
    };
    registerAdminPage(site, {
      ...gatedPage(pages),
      path: `${itemPath}/${command.name}`,
      summary: `${label}: ${command.name} form`,
      access: command.route.access,
      schema: { params: entity.schemas.idParams },
      handler: (ctx) => commandForm(ctx, null),
    });
    registerAdminPage(site, {
      ...gatedPage(pages),
      method: 'POST',
      path: `${itemPath}/${command.name}`,
      summary: `${label}: ${command.name}`,
      access: command.route.access,
      schema: { params: entity.schemas.idParams },
      ...(command.route.publishes ? { publishes: command.route.publishes } : {}),
      // The command's step before its transaction (a password hashed) runs before the page's opens.
      ...(step
        ? {
            beforeTransaction: async (ctx: AdminPrepareContext) => {
              requireForm(ctx.request);
              if (wantsFormAgain(ctx.body)) return undefined;
              return prepareApiRoute(command.route, ctx, { params: ctx.params, body: bodyOf(ctx.body) });
            },
          }
        : {}),
      handler: async (ctx) => {
        requireForm(ctx.request);
        if (wantsFormAgain(ctx.body)) return commandForm(ctx, ctx.body);
        const body = bodyOf(ctx.body);
        const row = (await run(command.route, ctx, {
          params: ctx.params,
          body,
          ...(step ? { prepared: ctx.prepared } : {}),
        })) as Row;
        return afterSave(pages, ctx, row, 200);
      },
      onError: async (ctx, p) => (formProblem(p) ? commandForm(ctx, ctx.body, p) : null),
    });
  }
}
