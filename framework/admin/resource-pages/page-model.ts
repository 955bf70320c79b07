// The generated pages' shared model, apart from entity-pages.ts (which builds it) so the form aids can take it without a cycle.
import type { ResolvedEntity } from '../../entity/resolve.ts';
import type { AdminPageContext, AdminSite } from '../page.ts';
import type { FieldText } from '../../entity/field-text.ts';
import type { Widget } from './widgets.ts';
import type { Api, Row } from './resource-api.ts';
import type { ActorRule } from './references.ts';
import type { Access } from '../../entity/define.ts';

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
   * secret shown once, EntityAdmin.shownOnce), not a form to swap.
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
  /** The fields a record's page and edit form show: every field but those shown once (EntityAdmin.shownOnce). */
  readonly shownFields: readonly string[];
  /** A secret this answer carries (EntityAdmin.shownOnce), each with its label and hint: empty for every other answer. */
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

/** A gated entity's pages carry its feature (EntityDefinition.feature): the guard refuses them as it refuses its routes. */
export const gatedPage = (pages: Pick<EntityPages, 'entity'>): { feature?: string } =>
  pages.entity.def.feature !== undefined ? { feature: pages.entity.def.feature } : {};
