import type { TSchema } from 'typebox';
import type { ResolvedEntity } from '../../entity/resolve.ts';
import { titleCase } from '../../entity/names.ts';
import { FORM_TOKEN_FIELD } from '../../access/form-token.ts';
import { runApiRoute as run } from '../api-route.ts';
import type { AdminPageContext, AdminSite } from '../page.ts';
import { renderTemplate } from '../render.ts';
import { aidFields } from './form-aids.ts';
import { peopleLabels } from '../labels.ts';
import { createInputs, editStateField } from './state-fields.ts';
import type { Access } from '../../entity/define.ts';
import { entitiesWithPages, referenceTargets, type ActorRule } from './references.ts';
import { SYSTEM_FIELD_TEXT, type FieldText } from '../../entity/field-text.ts';
import { displayField, inputValue, ticked, widgetsOf, type Widget } from './widgets.ts';
import { choiceLabelsOf, eventCatalog, withDeclaredChoices } from './choice-fields.ts';
import type { Api, Row } from './resource-api.ts';
import { formatMoney, isInstant, isoDate } from '../../format.ts';

/** One field of a generated form: an input, or a read-only value with why it is not editable. */
export interface FieldModel {
  readonly: boolean;
  label: string;
  value: string;
  /** The value is a date: its ISO form, for <time datetime>. */
  iso?: string;
  hint?: string;
  widget?: Widget & { id: string; error?: string; checked?: boolean; selected?: string[] };
}

/** A generated form as its template takes it. */
export interface FormModel {
  action: string;
  fields: FieldModel[];
  submit: string;
  cancel: string;
  alert?: object;
  intro?: string;
  /** Body fields naming another entity's row (a command's own references): offered as pickers, like the entity's. */
  references?: Readonly<Record<string, string>>;
  /**
   * Posted without htmx: the answer is a whole page the browser shows as it is (the record with a
   * secret shown once, EntityDefinition.shownOnce), not a form to swap.
   */
  plain?: boolean;
  /** Of those, the fields naming a person who must be able to act: their pickers offer only such people. */
  actors?: Readonly<Record<string, ActorRule>>;
}

/**
 * What every generated page of one entity shares, worked out once at startup: its paths and
 * labels, how a row is titled, the create and edit widgets, and the form helpers.
 */
export interface EntityPages {
  readonly site: AdminSite;
  readonly entity: ResolvedEntity;
  readonly api: Api;
  /** The list's path, /admin/<module>/<plural>. */
  readonly base: string;
  /** A record's path pattern, `${base}/:id`. */
  readonly itemPath: string;
  /** What people call one row and several (labels.ts): "Page or post", "Pages and posts". */
  readonly label: string;
  readonly labelPlural: string;
  readonly titleField: string;
  /** The new form's inputs: what the create route takes, less the choices that leave nothing to choose. */
  readonly createWidgets: Widget[];
  /** What a create sends without asking (state-fields.ts): the one value a forced choice can take. */
  readonly createFixed: Readonly<Record<string, string>>;
  /** The PATCH body's widgets, marked required where a record needs the field. */
  readonly patchWidgets: Widget[];
  /** What a person reads about a field (FieldText), the system columns included. */
  textOf(field: string): FieldText | undefined;
  /** A field's label: its FieldText's, else its name in words. */
  labelOf(field: string): string;
  /** The fields a record's page and edit form show: every field but those shown once (EntityDefinition.shownOnce). */
  readonly shownFields: readonly string[];
  /** A secret this answer carries (EntityDefinition.shownOnce), each with its label and hint: empty for every other answer. */
  revealed(row: Row): { label: string; hint: string; value: string }[];
  /** Whether a create or a command may answer a secret shown once: its forms then post without htmx. */
  readonly revealsSecrets: boolean;
  /** A row's field as a page prints it (an enumerated value by its label). */
  valueOf(row: Row, field: string): string;
  href(id: string, suffix?: string): string;
  titleOf(row: Row): string;
  /**
   * The fields of a create or edit form. A new form has an input for each field the create takes,
   * and nothing else; an edit form shows every field, read-only
   * where the route does not take it, and the state field as the record's state allows.
   */
  formFields(
    widgets: Widget[],
    row: Row | null,
    posted: Record<string, unknown> | null,
    errors: Record<string, string>,
    can: (access: Access) => boolean,
  ): FieldModel[];
  /** A form alone (an htmx swap) or in its page, with the status of a refusal. */
  formPage(ctx: AdminPageContext, title: string, form: FormModel, status?: number): Promise<string>;
  /** The record the path names, through the API's read route (row access, 404). */
  readRow(ctx: AdminPageContext): Promise<Row>;
}

export function entityPages(site: AdminSite, entity: ResolvedEntity, api: Api): EntityPages {
  const { names, def } = entity;
  const base = names.adminPath;
  const labels = peopleLabels(entity);
  const titleField = def.admin?.title ?? entity.fields[0] ?? 'id';
  const textOf = (field: string): FieldText | undefined =>
    def.fieldText?.[field] ?? (SYSTEM_FIELD_TEXT as Record<string, FieldText>)[field];
  const labelOf = (field: string): string => textOf(field)?.label ?? titleCase(field);
  const fieldSchemas = (entity.schemas.row as { properties?: Record<string, TSchema> }).properties ?? {};
  const events = eventCatalog(site.services.registry);
  const createBody = withDeclaredChoices(entity, widgetsOf(api.create.schema.body, textOf), events);
  const { inputs: createWidgets, fixed: createFixed } = createInputs(entity, createBody);
  // PATCH takes every field as optional; the edit form still marks (and keeps) what a record needs.
  const createRequired = new Set(createBody.filter((w) => w.required).map((w) => w.name));
  const patchWidgets = withDeclaredChoices(entity, widgetsOf(api.update.schema.body, textOf), events).map((w) => ({
    ...w,
    required: createRequired.has(w.name),
  }));
  // A checkbox group's values read on lists and detail pages as the form names them (an event by its words).
  const choiceLabels = choiceLabelsOf([...createBody, ...patchWidgets]);
  const shownOnce = new Set<string>(def.shownOnce ?? []);
  const shownFields = ['id', ...entity.fields, ...entity.computed, 'createdAt', 'updatedAt'].filter(
    (field) => !shownOnce.has(field),
  );
  const money = def.admin?.money ?? {};
  /** A row's field as a page prints it: an amount with its currency, a checkbox group's values by their words, else displayField. */
  const printed = (row: Row, field: string): string => {
    const value = row[field];
    const currency = money[field as keyof typeof money];
    if (currency !== undefined && typeof value === 'number' && typeof row[currency] === 'string')
      return formatMoney(value, row[currency] as string);
    const labels = choiceLabels.get(field);
    if (labels && Array.isArray(value)) return value.map((v) => labels.get(String(v)) ?? String(v)).join(', ');
    return displayField(fieldSchemas[field], value);
  };
  const commandLabel = (name: string): string => def.commands?.[name]?.admin?.label ?? titleCase(name);

  /** Why a field is not editable here, for its hint: the buttons that change it, or what sets it. */
  const readOnlyHint = (field: string): string | undefined => {
    const owners = entity.commandOwners[field];
    if (owners) {
      const names = owners.map((o) => `“${commandLabel(o)}”`);
      const list = names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}` : names[0];
      return `Changed with the ${list} button${names.length > 1 ? 's' : ''} on the record’s page.`;
    }
    if (entity.readOnly.includes(field)) return textOf(field)?.hint ?? 'Set by the service.';
    if (entity.immutable.includes(field)) return 'Cannot be changed after creation.';
    return undefined;
  };

  return {
    site,
    entity,
    api,
    base,
    itemPath: `${base}/:id`,
    label: labels.label,
    labelPlural: labels.labelPlural,
    titleField,
    createWidgets,
    createFixed,
    patchWidgets,
    textOf,
    labelOf,
    shownFields,
    revealsSecrets: shownOnce.size > 0,
    revealed: (row) =>
      [...shownOnce].flatMap((field) =>
        typeof row[field] === 'string' && row[field] !== ''
          ? [{ label: labelOf(field), hint: textOf(field)?.hint ?? '', value: row[field] as string }]
          : [],
      ),
    valueOf: printed,
    href: (id, suffix = '') => `${base}/${encodeURIComponent(id)}${suffix}`,
    titleOf: (row) => displayField(fieldSchemas[titleField], row[titleField]) || row.id,
    formFields(widgets, row, posted, errors, can) {
      const inputs = new Map(widgets.map((w) => [w.name, w]));
      const fields = row ? shownFields : entity.fields;
      const readOnly = (field: string, hint: string | undefined): FieldModel => ({
        readonly: true,
        label: labelOf(field),
        value: row ? printed(row, field) : '',
        ...(row && isInstant(row[field]) ? { iso: isoDate(row[field]) } : {}),
        ...(hint ? { hint } : {}),
      });
      return fields.flatMap((field): FieldModel[] => {
        let widget = inputs.get(field);
        // A new record has nothing to show yet but what the form asks: what commands and the service set comes later.
        if (!widget) return row ? [readOnly(field, readOnlyHint(field))] : [];
        if (row) {
          const state = editStateField(entity, api, widget, row, can);
          if (state?.kind === 'fixed') return [readOnly(field, state.hint)];
          if (state) widget = state.widget;
        }
        // A new form starts each field at its default (an endpoint's Active box ticked, as the API would store it).
        const source = posted ? posted[field] : row ? row[field] : widget.defaultValue;
        const value = posted && Array.isArray(source) ? source[source.length - 1] : source;
        const id = `field-${field}`;
        const checked = widget.kind === 'checkbox' ? value === true || value === 'true' || value === 'on' : undefined;
        const selected = widget.kind === 'checkboxes' ? (source === undefined ? [] : ticked(source)) : undefined;
        return [
          {
            readonly: false,
            label: widget.label,
            value: inputValue(widget, value),
            widget: {
              ...widget,
              id,
              ...(errors[field] ? { error: errors[field] } : {}),
              ...(checked !== undefined ? { checked } : {}),
              ...(selected !== undefined ? { selected } : {}),
            },
          },
        ];
      });
    },
    async formPage(ctx, title, form, status) {
      // Pickers for the reference fields and previews for the Markdown ones (form-aids.ts).
      const references = referenceTargets(
        site.services.registry,
        { ...def.references, ...form.references },
        entitiesWithPages(site.services.registry),
      );
      for (const [field, actor] of Object.entries(form.actors ?? {}))
        if (references[field]) references[field] = { ...references[field], actor };
      const fields = await aidFields(ctx, entity, form.fields, references);
      const html = renderTemplate('./admin/generated/form', {
        ...form,
        fields,
        csrfField: FORM_TOKEN_FIELD,
        csrf: ctx.csrf(),
      });
      return ctx.render({
        title,
        template: './admin/generated/page',
        data: { title, content: html, back: form.cancel },
        fragment: html,
        ...(status ? { status } : {}),
      });
    },
    readRow: async (ctx) => (await run(api.read, ctx, { params: ctx.params })) as Row,
  };
}
