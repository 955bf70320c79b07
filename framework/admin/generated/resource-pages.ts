import type { FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import type { AnyRoute, RouteDefinition } from '../../entity/define.ts';
import type { ResolvedEntity } from '../../entity/resolve.ts';
import type { Registry } from '../../entity/registry.ts';
import { titleCase } from '../../entity/names.ts';
import { problem, type ProblemError } from '../../errors.ts';
import { fieldCodeFormatter, protectedFieldCheck } from '../../http/register-route.ts';
import { validationProblem } from '../../http/problems.ts';
import { typeboxValidatorCompiler } from '../../http/validation.ts';
import { FORM_TOKEN_FIELD } from '../../access/form-token.ts';
import type { PageQuery, Page } from '../../operations/paging.ts';
import { apiRoute, runApiRoute as run } from '../api-route.ts';
import { isHtmx } from '../html.ts';
import { registerAdminPage, type AdminPageContext, type AdminSite } from '../page.ts';
import { renderTemplate } from '../render.ts';
import { bodyFromForm, display, inputValue, widgetsOf, type Widget } from './widgets.ts';
import { listModel } from './list-model.ts';

/**
 * The entities that get generated pages: every collection of a module that does not opt out with
 * `admin: { resourcePages: false }` (SPEC: files, notifications, tenants; roles have hand-written
 * pages). Singletons (the subscription) have none: they are one row, not a collection.
 */
export function generatedResources(registry: Registry): ResolvedEntity[] {
  const noScreens = new Set(registry.modules.filter((module) => module.admin?.resourcePages === false).map((module) => module.name));
  return registry.entities.filter((entity) => !entity.singleton && !noScreens.has(entity.module));
}

type Row = Record<string, unknown> & { id: string };

/** The API routes of one entity, by verb. */
interface Api {
  list: RouteDefinition;
  create: RouteDefinition;
  read: RouteDefinition;
  update: RouteDefinition;
  remove: RouteDefinition;
  commands: { name: string; route: RouteDefinition; body: TSchema | undefined }[];
}

const inTransaction = (route: AnyRoute | undefined): route is RouteDefinition => route !== undefined && route.transaction !== 'none';

function apiOf(registry: Registry, entity: ResolvedEntity): Api | undefined {
  const of = (verb: string) => apiRoute(registry, entity.names.operationId(verb));
  const [list, create, read, update, remove] = ['list', 'create', 'read', 'update', 'delete'].map(of);
  if (!inTransaction(list) || !inTransaction(create) || !inTransaction(read) || !inTransaction(update) || !inTransaction(remove)) return undefined;
  // A command with `prepare` runs outside the page's transaction (a payment first): it has no page.
  const commands = Object.keys(entity.def.commands ?? {}).flatMap((name) => {
    const route = of(name);
    return inTransaction(route) ? [{ name, route, body: route.schema.body }] : [];
  });
  return { list, create, read, update, remove, commands };
}

/** A form post only: JSON or anything else reaching an admin form target is refused like elsewhere. */
function requireForm(request: FastifyRequest): void {
  const type = (request.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') throw problem('UNSUPPORTED_MEDIA_TYPE', 'The admin forms take application/x-www-form-urlencoded');
}

/** Checks a body against the API route's schema as the route would, answering the same problem document. */
function bodyChecker(schema: TSchema | undefined, entity: ResolvedEntity, withFieldCodes: boolean) {
  if (!schema) return (_body: unknown) => undefined;
  const check = typeboxValidatorCompiler({ schema, method: 'POST', url: '', httpPart: 'body' });
  const format = withFieldCodes && entity.def.invalidCodes ? fieldCodeFormatter(entity.def.invalidCodes) : validationProblem;
  return (body: unknown) => {
    const result = check(body) as { error?: never[] };
    if (result.error) throw format(result.error, 'body');
  };
}

/** After a successful post: 303 to the page (post/redirect/get); htmx is told to navigate there. */
function done(ctx: AdminPageContext, location: string): string {
  if (isHtmx(ctx.request.headers)) {
    ctx.reply.code(200).header('hx-redirect', location);
    return '';
  }
  return ctx.redirect(location);
}

/** Field errors from the problem document's errors[] (pointer /body/<field>), the rest as the alert. */
function errorsOf(p: ProblemError): { fields: Record<string, string>; alert: { title: string; items: string[]; code: string } } {
  const fields: Record<string, string> = {};
  const items: string[] = [];
  for (const error of p.errors ?? []) {
    const field = /^\/body\/([^/]+)/.exec(error.pointer)?.[1];
    if (field && fields[field] === undefined) fields[field] = error.message;
    else if (!field) items.push(error.message);
  }
  const named = p.extensions.field;
  if (typeof named === 'string' && fields[named] === undefined) fields[named] = p.message;
  const title = p.errors?.length ? 'The form has errors; see the fields marked below.' : p.message;
  return { fields, alert: { title, items, code: p.code } };
}

/** Problems a form shows beside its fields; anything else (403, 404, 5xx) is the error page. */
const formProblem = (p: ProblemError) => p.status === 400 || p.status === 409 || p.status === 413 || p.status === 422;

interface FieldModel {
  readonly: boolean;
  label: string;
  value: string;
  hint?: string;
  widget?: Widget & { id: string; error?: string; checked?: boolean };
}

export function registerResourcePages(site: AdminSite): void {
  for (const entity of generatedResources(site.services.registry)) {
    const api = apiOf(site.services.registry, entity);
    if (api) registerEntityPages(site, entity, api);
  }
}

function registerEntityPages(site: AdminSite, entity: ResolvedEntity, api: Api): void {
  const { names, def } = entity;
  const base = names.adminPath;
  const itemPath = `${base}/:id`;
  const href = (id: string, suffix = '') => `${base}/${encodeURIComponent(id)}${suffix}`;
  const label = names.label;
  const titleField = def.admin?.title ?? entity.fields[0] ?? 'id';
  const titleOf = (row: Row) => display(row[titleField]) || row.id;

  const createWidgets = widgetsOf(api.create.schema.body);
  // PATCH takes every field as optional; the edit form still marks (and keeps) what a record needs.
  const createRequired = new Set(createWidgets.filter((w) => w.required).map((w) => w.name));
  const patchWidgets = widgetsOf(api.update.schema.body).map((w) => ({ ...w, required: createRequired.has(w.name) }));
  const checkCreate = bodyChecker(api.create.schema.body, entity, true);
  const checkPatch = bodyChecker(api.update.schema.body, entity, true);
  const protectCreate = protectedFieldCheck(entity, api.create);
  const protectPatch = protectedFieldCheck(entity, api.update);

  /** Why a field is not editable here, for its hint. */
  const readOnlyHint = (field: string, editing: boolean): string | undefined => {
    const owners = entity.commandOwners[field];
    if (owners) return `Set by the ${owners.map(titleCase).join(' or ')} command.`;
    if (entity.readOnly.includes(field)) return `${titleCase(field)} is ${def.readOnlyReasons?.[field] ?? 'set by the service'}.`;
    if (editing && entity.immutable.includes(field)) return 'Cannot be changed after creation.';
    return undefined;
  };

  /** The fields of a create or edit form: inputs for what the route takes, read-only values for the rest. */
  const formFields = (widgets: Widget[], row: Row | null, posted: Record<string, unknown> | null, errors: Record<string, string>): FieldModel[] => {
    const inputs = new Map(widgets.map((w) => [w.name, w]));
    const names = row ? ['id', ...entity.fields, ...entity.computed, 'createdAt', 'updatedAt'] : entity.fields;
    return names.flatMap((field): FieldModel[] => {
      const widget = inputs.get(field);
      if (!widget) {
        const hint = readOnlyHint(field, row !== null);
        // A new record shows what it will not take from the form (commands, the service); an edit shows everything.
        if (!row && !hint) return [];
        return [{ readonly: true, label: titleCase(field), value: row ? display(row[field]) : '', ...(hint ? { hint } : {}) }];
      }
      const source = posted ? posted[field] : row?.[field];
      const value = posted && Array.isArray(source) ? source[source.length - 1] : source;
      const id = `field-${field}`;
      const checked = widget.kind === 'checkbox' ? value === true || value === 'true' || value === 'on' : undefined;
      return [{ readonly: false, label: widget.label, value: inputValue(widget, value), widget: { ...widget, id, ...(errors[field] ? { error: errors[field] } : {}), ...(checked !== undefined ? { checked } : {}) } }];
    });
  };

  const formHtml = (ctx: AdminPageContext, form: { action: string; fields: FieldModel[]; submit: string; cancel: string; alert?: object; intro?: string }) =>
    renderTemplate('./admin/generated/form', { ...form, csrfField: FORM_TOKEN_FIELD, csrf: ctx.csrf() });

  const formPage = async (ctx: AdminPageContext, title: string, form: Parameters<typeof formHtml>[1], status?: number) => {
    const html = formHtml(ctx, form);
    return ctx.render({ title, template: './admin/generated/page', data: { title, content: html, back: form.cancel }, fragment: html, ...(status ? { status } : {}) });
  };

  const readRow = async (ctx: AdminPageContext): Promise<Row> => (await run(api.read, ctx, { params: ctx.params })) as Row;

  // ---- list and its rows fragment ----
  const listPage = async (ctx: AdminPageContext, fragmentOnly: boolean) => {
    const page = (await run(api.list, ctx, { query: ctx.query })) as Page<Row>;
    const model = listModel(entity, base, ctx.query as unknown as PageQuery, page, titleField);
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

  // ---- new ----
  const newForm = (ctx: AdminPageContext, posted: Record<string, unknown> | null, p?: ProblemError) => {
    const errors = p ? errorsOf(p) : undefined;
    return formPage(
      ctx,
      `New ${label.toLowerCase()}`,
      { action: `${base}/new`, fields: formFields(createWidgets, null, posted, errors?.fields ?? {}), submit: `Create ${label.toLowerCase()}`, cancel: base, ...(errors ? { alert: errors.alert } : {}) },
      p?.status,
    );
  };
  registerAdminPage(site, { path: `${base}/new`, summary: `New ${label.toLowerCase()}: form`, access: api.create.access, handler: (ctx) => newForm(ctx, null) });
  registerAdminPage(site, {
    method: 'POST',
    path: `${base}/new`,
    summary: `New ${label.toLowerCase()}: create`,
    access: api.create.access,
    ...(api.create.publishes ? { publishes: api.create.publishes } : {}),
    handler: async (ctx) => {
      requireForm(ctx.request);
      const body = bodyFromForm(createWidgets, ctx.body);
      await protectCreate?.({ body } as FastifyRequest);
      checkCreate(body);
      const row = (await run(api.create, ctx, { body })) as Row;
      return done(ctx, href(row.id));
    },
    onError: async (ctx, p) => (formProblem(p) ? newForm(ctx, ctx.body, p) : null),
  });

  // ---- detail ----
  registerAdminPage(site, {
    path: itemPath,
    summary: `${label}: detail`,
    access: api.read.access,
    schema: { params: entity.schemas.idParams },
    handler: async (ctx) => {
      const row = await readRow(ctx);
      const items = ['id', ...entity.fields, ...entity.computed, 'createdAt', 'updatedAt'].map((field) => ({ label: titleCase(field), value: display(row[field]) }));
      const csrf = ctx.csrf();
      const title = `${label}: ${titleOf(row)}`;
      return ctx.render({
        title,
        template: './admin/generated/detail',
        data: {
          title,
          items,
          back: base,
          backLabel: `All ${names.labelPlural.toLowerCase()}`,
          editHref: ctx.can(api.update.access) ? href(row.id, '/edit') : '',
          deleteHref: ctx.can(api.remove.access) ? href(row.id, '/delete') : '',
          deleteConfirm: `Delete this ${label.toLowerCase()}?`,
          csrfVals: JSON.stringify({ [FORM_TOKEN_FIELD]: csrf }),
          commands: api.commands.filter((c) => ctx.can(c.route.access)).map((c) => ({ label: titleCase(c.name), href: href(row.id, `/${c.name}`) })),
        },
      });
    },
  });

  // ---- edit ----
  const editForm = async (ctx: AdminPageContext, posted: Record<string, unknown> | null, p?: ProblemError) => {
    const row = await readRow(ctx);
    const errors = p ? errorsOf(p) : undefined;
    return formPage(
      ctx,
      `Edit ${label.toLowerCase()}: ${titleOf(row)}`,
      {
        action: href(row.id, '/edit'),
        fields: formFields(patchWidgets, row, posted, errors?.fields ?? {}),
        submit: 'Save changes',
        cancel: href(row.id),
        ...(errors ? { alert: errors.alert } : {}),
      },
      p?.status,
    );
  };
  registerAdminPage(site, {
    path: `${itemPath}/edit`,
    summary: `${label}: edit form`,
    access: api.update.access,
    schema: { params: entity.schemas.idParams },
    handler: (ctx) => editForm(ctx, null),
  });
  registerAdminPage(site, {
    method: 'POST',
    path: `${itemPath}/edit`,
    summary: `${label}: update`,
    access: api.update.access,
    schema: { params: entity.schemas.idParams },
    ...(api.update.publishes ? { publishes: api.update.publishes } : {}),
    handler: async (ctx) => {
      requireForm(ctx.request);
      const body = bodyFromForm(patchWidgets, ctx.body);
      await protectPatch?.({ body } as FastifyRequest);
      checkPatch(body);
      const row = (await run(api.update, ctx, { params: ctx.params, body })) as Row;
      return done(ctx, href(row.id));
    },
    onError: async (ctx, p) => (formProblem(p) ? editForm(ctx, ctx.body, p) : null),
  });

  // ---- delete ----
  const deletePage = async (ctx: AdminPageContext, p?: ProblemError) => {
    const row = await readRow(ctx);
    const title = `Delete ${label.toLowerCase()}: ${titleOf(row)}`;
    return ctx.render({
      title,
      template: './admin/generated/delete',
      ...(p ? { status: p.status } : {}),
      data: {
        title,
        alert: p ? { kind: 'error', title: p.message, code: p.code } : null,
        confirm: {
          action: href(row.id, '/delete'),
          csrfField: FORM_TOKEN_FIELD,
          csrf: ctx.csrf(),
          question: `Delete ${label.toLowerCase()} “${titleOf(row)}”? ${entity.deleteMode === 'hard' ? 'It is removed for good.' : 'It is no longer listed or changed.'}`,
          confirmLabel: `Delete ${label.toLowerCase()}`,
          cancelHref: href(row.id),
        },
      },
    });
  };
  registerAdminPage(site, {
    path: `${itemPath}/delete`,
    summary: `${label}: delete confirmation`,
    access: api.remove.access,
    schema: { params: entity.schemas.idParams },
    handler: (ctx) => deletePage(ctx),
  });
  registerAdminPage(site, {
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

  // ---- one form per command ----
  for (const command of api.commands) {
    const widgets = widgetsOf(command.body);
    const check = bodyChecker(command.body, entity, false);
    const definition = def.commands![command.name]!;
    const commandForm = async (ctx: AdminPageContext, posted: Record<string, unknown> | null, p?: ProblemError) => {
      const row = await readRow(ctx);
      const errors = p ? errorsOf(p) : undefined;
      const fields: FieldModel[] = widgets.map((widget) => {
        const source = posted?.[widget.name];
        const value = Array.isArray(source) ? source[source.length - 1] : source;
        const checked = widget.kind === 'checkbox' ? value === 'true' : undefined;
        return {
          readonly: false,
          label: widget.label,
          value: inputValue(widget, value),
          widget: { ...widget, id: `field-${widget.name}`, ...(errors?.fields[widget.name] ? { error: errors.fields[widget.name] } : {}), ...(checked !== undefined ? { checked } : {}) },
        };
      });
      return formPage(
        ctx,
        `${titleCase(command.name)}: ${titleOf(row)}`,
        {
          action: href(row.id, `/${command.name}`),
          intro: [definition.summary, definition.description].filter(Boolean).join(' — '),
          fields,
          submit: titleCase(command.name),
          cancel: href(row.id),
          ...(errors ? { alert: errors.alert } : {}),
        },
        p?.status,
      );
    };
    registerAdminPage(site, {
      path: `${itemPath}/${command.name}`,
      summary: `${label}: ${command.name} form`,
      access: command.route.access,
      schema: { params: entity.schemas.idParams },
      handler: (ctx) => commandForm(ctx, null),
    });
    registerAdminPage(site, {
      method: 'POST',
      path: `${itemPath}/${command.name}`,
      summary: `${label}: ${command.name}`,
      access: command.route.access,
      schema: { params: entity.schemas.idParams },
      ...(command.route.publishes ? { publishes: command.route.publishes } : {}),
      handler: async (ctx) => {
        requireForm(ctx.request);
        const body = command.body ? bodyFromForm(widgets, ctx.body) : undefined;
        if (body !== undefined) check(body);
        const row = (await run(command.route, ctx, { params: ctx.params, body })) as Row;
        return done(ctx, href(row.id));
      },
      onError: async (ctx, p) => (formProblem(p) ? commandForm(ctx, ctx.body, p) : null),
    });
  }
}
