import { gatedPage } from './page-model.ts';
import Type from 'typebox';
import { SEARCH_MAX_LENGTH } from '../../operations/page-query.ts';
import type { ResolvedEntity } from '../../entity/resolve.ts';
import { isMarkdown } from '../../markdown/markdown-field.ts';
import { ADMIN_MARKDOWN, renderMarkdown } from '../../markdown/render.ts';
import { registerAdminPage, type AdminPageContext } from '../page.ts';
import { renderTemplate } from '../render.ts';
import type { EntityPages, FieldModel } from './page-model.ts';
import { StringEnum } from '../../entity/string-enum.ts';
import {
  ACTOR_FIELD,
  actorRules,
  pickerFor,
  pickerOptions,
  pickerPage,
  referenceTarget,
  type PickerModel,
  type ReferenceTarget,
} from './references.ts';

/**
 * What a generated form offers besides its inputs: a picker for a field naming another entity's
 * row (references.ts), and a preview of a Markdown field. Both work without JavaScript: their
 * buttons post the form back to its own page, which answers the form again (nothing saved) with
 * the search applied or the preview shown. With htmx the type-ahead fetches only the options; the
 * Preview button posts the form through htmx like its own button, and the answer, the form again
 * with the preview, takes its place: each rendering of the form carries only its own messages, so
 * no message of an earlier refused post stays under a field filled since.
 */

/** The button that asks for a Markdown field's preview posts `_preview=<field>`. */
export const PREVIEW_FIELD = '_preview';
/** The picker's search button posts `_search=<field>`, its text `_q`. */
export const SEARCH_FIELD = '_search';
export const SEARCH_TEXT_FIELD = '_q';

/** A form field with its aids, as templates/admin/generated/form.eta takes it. */
export type AidedField = FieldModel & {
  picker?: PickerModel;
  markdown?: { label: string; html?: string };
};

const text = (value: unknown): string | undefined => {
  const last = Array.isArray(value) ? value[value.length - 1] : value;
  return typeof last === 'string' ? last : undefined;
};

/**
 * Whether a post asks for the form again (a preview or a search) rather than to save it. The
 * aids' own fields are taken out of the posted body either way, so they never reach the API.
 */
export function wantsFormAgain(body: Record<string, unknown>): boolean {
  const again = text(body[PREVIEW_FIELD]) !== undefined || text(body[SEARCH_FIELD]) !== undefined;
  if (!again) delete body[SEARCH_TEXT_FIELD];
  return again;
}

/** The form's fields with their aids: pickers for the reference fields, previews for the Markdown ones. */
export async function aidFields(
  ctx: AdminPageContext,
  entity: ResolvedEntity,
  fields: readonly FieldModel[],
  references: Readonly<Record<string, ReferenceTarget>>,
): Promise<AidedField[]> {
  const searched = text(ctx.body[SEARCH_FIELD]);
  const previewed = text(ctx.body[PREVIEW_FIELD]);
  const aided: AidedField[] = [];
  for (const field of fields) {
    const widget = field.readonly ? undefined : field.widget;
    const target = widget ? references[widget.name] : undefined;
    if (widget && target) {
      const picker = await pickerFor(ctx, target, {
        selected: field.value,
        q: searched === widget.name ? text(ctx.body[SEARCH_TEXT_FIELD]) : undefined,
      });
      aided.push(picker ? { ...field, picker } : field);
      continue;
    }
    if (widget && widget.kind === 'textarea' && isMarkdown(entity.def.fields[widget.name])) {
      const html = previewed === widget.name ? renderMarkdown(field.value, ADMIN_MARKDOWN) : undefined;
      aided.push({
        ...field,
        markdown: {
          label: `Preview ${widget.label.toLowerCase()}`,
          ...(html !== undefined ? { html } : {}),
        },
      });
      continue;
    }
    aided.push(field);
  }
  return aided;
}

/**
 * GET <list>/options?_q=: the picker's type-ahead (htmx), the option elements of the rows whose
 * searchable fields contain the text, through the entity's list route and its access. With
 * `_for=<entity>.<command>.<field>`, a command's actor field that references this entity, only the
 * people who can act (references.ts, pickerPage); any other `_for` is refused by the query schema.
 */
export function registerOptionsPage(pages: EntityPages, withPages: ReadonlySet<string>): void {
  const { site, entity, api, base, label } = pages;
  if (entity.searchable.length === 0) return;
  const target = referenceTarget(site.services, entity.names.key, withPages);
  if (!target) return;
  // The actor fields whose people are rows of this entity, known at boot.
  const actors = [...actorRules(site.services.registry).values()].filter(
    (rule) => rule.references === entity.names.key,
  );
  const OptionsQuery = Type.Object({
    [SEARCH_TEXT_FIELD]: Type.Optional(Type.String({ maxLength: SEARCH_MAX_LENGTH })),
    ...(actors.length > 0 ? { [ACTOR_FIELD]: Type.Optional(StringEnum(actors.map((rule) => rule.key))) } : {}),
  });
  const byKey = new Map(actors.map((rule) => [rule.key, rule]));
  registerAdminPage(site, {
    ...gatedPage(pages),
    path: `${base}/options`,
    summary: `${label}: options of a picker (htmx fragment)`,
    access: api.list.access,
    schema: { querystring: OptionsQuery },
    handler: async (ctx) => {
      const actor = byKey.get(text(ctx.query[ACTOR_FIELD]) ?? '');
      const page = await pickerPage(ctx, actor ? { ...target, actor } : target, text(ctx.query[SEARCH_TEXT_FIELD]));
      const options = pickerOptions(target, page.items);
      const shown =
        page.total > options.length
          ? `${options.length} of ${page.total}${page.totalExact ? '' : '+'}`
          : `${options.length}`;
      return renderTemplate('./admin/components/options', {
        placeholder: options.length === 0 ? 'No match' : `Choose one (${shown} shown)`,
        options,
      });
    },
  });
}
