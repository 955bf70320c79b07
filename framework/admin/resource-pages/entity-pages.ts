import type { TSchema } from 'typebox';
import type { ResolvedEntity } from '../../entity/resolve.ts';
import { titleCase } from '../../entity/names.ts';
import { FORM_TOKEN_FIELD } from '../../access/form-token.ts';
import { runApiRoute as run } from '../api-route.ts';
import type { AdminSite } from '../page.ts';
import { renderTemplate } from '../render.ts';
import { aidFields, limitToInitialStates } from './form-aids.ts';
import { entitiesWithPages, referenceTargets } from './references.ts';
import { SYSTEM_FIELD_TEXT, type FieldText } from '../../entity/field-text.ts';
import { displayField, inputValue, widgetsOf } from './widgets.ts';
import type { Api, Row } from './resource-api.ts';
import type { EntityPages, FieldModel } from './page-model.ts';

export type { EntityPages, FieldModel, FormModel } from './page-model.ts';

export function entityPages(site: AdminSite, entity: ResolvedEntity, api: Api): EntityPages {
  const { names, def } = entity;
  const base = names.adminPath;
  const titleField = def.admin?.title ?? entity.fields[0] ?? 'id';
  const textOf = (field: string): FieldText | undefined =>
    def.admin?.fieldText?.[field] ?? (SYSTEM_FIELD_TEXT as Record<string, FieldText>)[field];
  const labelOf = (field: string): string => textOf(field)?.label ?? titleCase(field);
  const fieldSchemas = (entity.schemas.row as { properties?: Record<string, TSchema> }).properties ?? {};
  const createWidgets = widgetsOf(api.create.schema.body, textOf);
  // PATCH takes every field as optional; the edit form still marks (and keeps) what a record needs.
  limitToInitialStates(entity, createWidgets);
  const createRequired = new Set(createWidgets.filter((w) => w.required).map((w) => w.name));
  const patchWidgets = widgetsOf(api.update.schema.body, textOf).map((w) => ({
    ...w,
    required: createRequired.has(w.name),
  }));
  const commandLabel = (name: string): string => def.commands?.[name]?.admin?.label ?? titleCase(name);

  /** Why a field is not editable here, for its hint: the buttons that change it, or what sets it. */
  const readOnlyHint = (field: string, editing: boolean): string | undefined => {
    const owners = entity.commandOwners[field];
    if (owners) {
      const names = owners.map((o) => `“${commandLabel(o)}”`);
      const list = names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}` : names[0];
      return `Changed with the ${list} button${names.length > 1 ? 's' : ''} on the record’s page.`;
    }
    if (entity.readOnly.includes(field)) return textOf(field)?.hint ?? 'Set by the service.';
    if (editing && entity.immutable.includes(field)) return 'Cannot be changed after creation.';
    return undefined;
  };

  return {
    site,
    entity,
    api,
    base,
    itemPath: `${base}/:id`,
    label: names.label,
    titleField,
    createWidgets,
    patchWidgets,
    textOf,
    labelOf,
    valueOf: (row, field) => displayField(fieldSchemas[field], row[field]),
    href: (id, suffix = '') => `${base}/${encodeURIComponent(id)}${suffix}`,
    titleOf: (row) => displayField(fieldSchemas[titleField], row[titleField]) || row.id,
    formFields(widgets, row, posted, errors) {
      const inputs = new Map(widgets.map((w) => [w.name, w]));
      const fields = row ? ['id', ...entity.fields, ...entity.computed, 'createdAt', 'updatedAt'] : entity.fields;
      return fields.flatMap((field): FieldModel[] => {
        const widget = inputs.get(field);
        if (!widget) {
          const hint = readOnlyHint(field, row !== null);
          // A new record shows what it will not take from the form (commands, the service); an edit shows everything.
          if (!row && !hint) return [];
          return [
            {
              readonly: true,
              label: labelOf(field),
              value: row ? displayField(fieldSchemas[field], row[field]) : '',
              ...(hint ? { hint } : {}),
            },
          ];
        }
        const source = posted ? posted[field] : row?.[field];
        const value = posted && Array.isArray(source) ? source[source.length - 1] : source;
        const id = `field-${field}`;
        const checked = widget.kind === 'checkbox' ? value === true || value === 'true' || value === 'on' : undefined;
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
