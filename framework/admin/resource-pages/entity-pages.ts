import type { TSchema } from 'typebox';
import type { ResolvedEntity } from '../../entity/resolve.ts';
import { titleCase } from '../../entity/names.ts';
import { FORM_TOKEN_FIELD } from '../../access/form-token.ts';
import { runApiRoute as run } from '../api-route.ts';
import type { AdminSite } from '../page.ts';
import { renderTemplate } from '../render.ts';
import { aidFields } from './form-aids.ts';
import { peopleLabels } from '../labels.ts';
import { createInputs, editStateField } from './state-fields.ts';
import { entitiesWithPages, referenceTargets } from './references.ts';
import { SYSTEM_FIELD_TEXT, type FieldText } from '../../entity/field-text.ts';
import { displayField, inputValue, ticked, widgetsOf } from './widgets.ts';
import { choiceLabelsOf, eventCatalog, withDeclaredChoices } from './choice-fields.ts';
import type { Api, Row } from './resource-api.ts';
import { formatMoney, isInstant, isoDate } from '../../format.ts';
import { isCurrency, moneyFields } from '../../entity/money.ts';

/** The last of repeated form values (a select posts one, a field sent twice its last). */
const last = (value: unknown): unknown => (Array.isArray(value) ? value[value.length - 1] : value);
import type { EntityPages, FieldModel } from './page-model.ts';

export type { EntityPages, FieldModel, FormModel } from './page-model.ts';

export function entityPages(site: AdminSite, entity: ResolvedEntity, api: Api): EntityPages {
  const { names, def } = entity;
  const base = names.adminPath;
  const labels = peopleLabels(entity);
  const titleField = def.admin?.title ?? entity.fields[0] ?? 'id';
  const textOf = (field: string): FieldText | undefined =>
    def.admin?.fieldText?.[field] ?? (SYSTEM_FIELD_TEXT as Record<string, FieldText>)[field];
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
  const shownOnce = new Set<string>(def.admin?.shownOnce ?? []);
  const shownFields = ['id', ...entity.fields, ...entity.computed, 'createdAt', 'updatedAt'].filter(
    (field) => !shownOnce.has(field),
  );
  // Money fields (framework/entity/money.ts) → the field holding each one's currency.
  const money: Record<string, string> = moneyFields(def.fields);
  /** An amount in the currency the values hold, as people read it ("€9.00"); undefined without a currency in use. */
  const amountOf = (values: Record<string, unknown>, field: string, amount: unknown): string | undefined => {
    const currencyField = money[field];
    const currency = currencyField === undefined ? undefined : last(values[currencyField]);
    return typeof amount === 'number' &&
      Number.isInteger(amount) &&
      typeof currency === 'string' &&
      isCurrency(currency)
      ? formatMoney(amount, currency)
      : undefined;
  };
  /** A row's field as a page prints it: an amount with its currency, a checkbox group's values by their words, else displayField. */
  const printed = (row: Row, field: string): string => {
    const value = row[field];
    const amount = amountOf(row, field, value);
    if (amount !== undefined) return amount;
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
        // An amount is typed in minor units, as the API takes it; beside it, what it reads as in its currency.
        const typed = typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value;
        const amount = amountOf({ ...row, ...posted }, field, typed);
        const hint =
          amount === undefined ? widget.hint : [widget.hint, `Reads as ${amount}.`].filter(Boolean).join(' ');
        return [
          {
            readonly: false,
            label: widget.label,
            value: inputValue(widget, value),
            widget: {
              ...widget,
              ...(hint ? { hint } : {}),
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
        site.services,
        { ...def.admin?.references, ...form.references },
        entitiesWithPages(site.services),
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
