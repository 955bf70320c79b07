import Type, { type TSchema } from 'typebox';
import { titleCase } from '../../entity/names.ts';
import type { FieldText } from '../../entity/field-text.ts';
import { declaredDefault } from '../../entity/storage.ts';
import { formatDateTime, isInstant } from '../../format.ts';

/**
 * Form widgets from TypeBox schemas, for every entity alike (no per-entity code): how a field is
 * shown, how its posted text becomes the typed value the API's body schema checks, and how a
 * stored value reads on a page.
 *
 * Times: a date-time field is edited in a datetime-local input read as UTC (the value shown is the
 * stored instant in UTC, and what is typed is taken as UTC), so a form means the same instant
 * whatever the browser's time zone; pages print times by the one formatter (framework/format.ts),
 * "27 Nov 2026, 08:26 UTC", in a <time datetime>.
 */
export type WidgetKind =
  | 'text'
  | 'textarea'
  | 'select'
  | 'checkbox'
  | 'integer'
  | 'number'
  | 'datetime'
  | 'email'
  | 'password'
  | 'list'
  | 'checkboxes'
  | 'json';

export interface Widget {
  name: string;
  label: string;
  kind: WidgetKind;
  required: boolean;
  /** The body may send null for it (an optional field of a PATCH): an emptied input clears the field. */
  clearable?: boolean;
  hint?: string;
  /** A select's or a checkbox group's choices; `group` heads a run of them (a module's events). */
  options?: { value: string; label: string; group?: string }[];
  min?: number;
  max?: number;
  minlength?: number;
  maxlength?: number;
  /** The schema's default (what a create stores when the field is left out): a new form starts there. */
  defaultValue?: unknown;
}

/** Strings that may be longer than this are edited in a textarea (e.g. a content body, a description). */
const TEXTAREA_FROM = 500;

interface SchemaNode {
  type?: string | string[];
  format?: string;
  /** A value sent and never read back (OpenAPI's writeOnly): a password. */
  writeOnly?: boolean;
  const?: unknown;
  enum?: unknown[];
  anyOf?: SchemaNode[];
  items?: SchemaNode;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  description?: string;
}

/** The schema without its optional marker and without a `| null` branch. */
function core(schema: TSchema): SchemaNode {
  const node = schema as SchemaNode;
  if (node.anyOf) {
    const rest = node.anyOf.filter((branch) => branch.type !== 'null');
    if (rest.length === 1) return rest[0]!;
  }
  return node;
}

/** Whether a body may send null for the field: a type list naming null, or a null branch. */
function admitsNull(schema: TSchema): boolean {
  const node = schema as SchemaNode;
  if (Array.isArray(node.type) && node.type.includes('null')) return true;
  return (node.anyOf ?? []).some((branch) => branch.type === 'null');
}

/** The values an enumeration allows (a union of literals or an enum), else undefined. */
function choices(node: SchemaNode): string[] | undefined {
  // null is no choice: a clearable field's select offers its empty option for it.
  if (node.enum) return node.enum.filter((value) => value !== null).map(String);
  if (node.anyOf && node.anyOf.length > 0 && node.anyOf.every((branch) => branch.const !== undefined))
    return node.anyOf.map((b) => String(b.const));
  return undefined;
}

/** The label and hint a person reads: the field's FieldText; the API's description is for developers and never shown. */
const withHint = (text: FieldText | undefined, extra?: string): { hint?: string } => {
  const hint = [text?.hint, extra].filter(Boolean).join(' ');
  return hint ? { hint } : {};
};

export function widgetOf(name: string, schema: TSchema, required: boolean, text?: FieldText): Widget {
  const node = core(schema);
  const declared = declaredDefault(schema) ?? declaredDefault(node as TSchema);
  const base = {
    name,
    label: text?.label ?? titleCase(name),
    required,
    ...(admitsNull(schema) ? { clearable: true } : {}),
    ...withHint(text),
    ...(declared ? { defaultValue: declared.value } : {}),
  };
  const options = choices(node);
  if (options)
    return { ...base, kind: 'select', options: options.map((value) => ({ value, label: choiceLabel(value) })) };
  const type = Array.isArray(node.type) ? node.type.find((t) => t !== 'null') : node.type;
  const bounds = {
    ...(node.minimum !== undefined ? { min: node.minimum } : {}),
    ...(node.maximum !== undefined ? { max: node.maximum } : {}),
  };
  switch (type) {
    case 'boolean':
      return { ...base, kind: 'checkbox' };
    case 'integer':
      return { ...base, kind: 'integer', ...bounds };
    case 'number':
      return { ...base, kind: 'number', ...bounds };
    case 'array': {
      // An array of enumerated values: one checkbox per value.
      const values = node.items ? choices(core(node.items as TSchema)) : undefined;
      if (values)
        return { ...base, kind: 'checkboxes', options: values.map((value) => ({ value, label: choiceLabel(value) })) };
      return { ...base, kind: 'list', ...withHint(text, 'Separate values with commas.') };
    }
    case 'string': {
      if (node.format === 'date-time') return { ...base, kind: 'datetime', ...withHint(text, 'In UTC.') };
      if (node.format === 'email') return { ...base, kind: 'email' };
      // A reference (uuid) is typed as text: no per-entity lookup widget.
      if (node.format === 'uuid') return { ...base, kind: 'text' };
      const lengths = {
        ...(node.minLength !== undefined ? { minlength: node.minLength } : {}),
        ...(node.maxLength !== undefined ? { maxlength: node.maxLength } : {}),
      };
      // A password (writeOnly): typed into a password input, and never written back into the form.
      if (node.writeOnly === true) return { ...base, kind: 'password', ...lengths };
      const long = node.maxLength !== undefined && node.maxLength > TEXTAREA_FROM;
      return { ...base, kind: long ? 'textarea' : 'text', ...lengths };
    }
    default:
      return { ...base, kind: 'json', ...withHint(text, 'Written as JSON.') };
  }
}

/** The widgets of an object schema's properties, in declaration order; required as the object says; labelled by `texts`. */
export function widgetsOf(
  schema: TSchema | undefined,
  texts: (name: string) => FieldText | undefined = () => undefined,
): Widget[] {
  const object = schema as { properties?: Record<string, TSchema>; required?: string[] } | undefined;
  if (!object?.properties) return [];
  const required = new Set(object.required ?? []);
  // A field with a column default (WithDefault) always holds a value: the form offers its default, never a blank.
  const holdsValue = (property: TSchema) => declaredDefault(property) !== undefined && !admitsNull(property);
  return Object.entries(object.properties).map(([name, property]) =>
    widgetOf(name, property, (required.has(name) && !Type.IsOptional(property)) || holdsValue(property), texts(name)),
  );
}

/** An enumerated value as a person reads it: in_progress → In progress. */
export const choiceLabel = (value: string): string => titleCase(value);

/** A field's value as a page prints it: an enumerated value by its label, anything else by display(). */
export function displayField(schema: TSchema | undefined, value: unknown): string {
  if (schema && typeof value === 'string' && choices(core(schema))?.includes(value)) return choiceLabel(value);
  return display(value);
}

/** The last of repeated form values (a checkbox posts its hidden "false" before its "true"). */
const last = (value: unknown): unknown => (Array.isArray(value) ? value[value.length - 1] : value);

/**
 * The typed value of one posted field, or undefined to leave the field out (an empty optional
 * field). Text that is no number or instant stays text, so the API's schema reports it beside
 * the field rather than the form guessing.
 */
export function fromForm(widget: Widget, posted: unknown): unknown {
  // A checkbox group posts an empty marker, then each ticked value: none ticked is an empty list.
  if (widget.kind === 'checkboxes') return posted === undefined ? undefined : ticked(posted);
  const raw = last(posted);
  if (widget.kind === 'checkbox') return raw === 'true' || raw === 'on';
  if (typeof raw !== 'string') return undefined;
  if (raw === '') {
    // Optional: null where the body may clear the field (an edit), else left out (a create takes the default).
    // Required: empty text is sent so the schema names its rule; any other kind is reported missing.
    if (!widget.required) return widget.clearable ? null : undefined;
    return widget.kind === 'text' || widget.kind === 'textarea' || widget.kind === 'email' || widget.kind === 'password'
      ? ''
      : undefined;
  }
  switch (widget.kind) {
    case 'integer':
    case 'number': {
      const n = Number(raw);
      return raw.trim() !== '' && Number.isFinite(n) ? n : raw;
    }
    case 'datetime': {
      const instant = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(raw)
        ? new Date(`${raw}Z`)
        : new Date(Number.NaN);
      return Number.isNaN(instant.getTime()) ? raw : instant.toISOString();
    }
    case 'list':
      return raw
        .split(',')
        .map((v) => v.trim())
        .filter((v) => v !== '');
    case 'json':
      try {
        return JSON.parse(raw);
      } catch {
        return raw;
      }
    default:
      return raw;
  }
}

/** The values a checkbox group posted (one value, or several), its empty marker left out. */
export function ticked(posted: unknown): string[] {
  return (Array.isArray(posted) ? posted : [posted]).filter((v): v is string => typeof v === 'string' && v !== '');
}

/** A form body from posted fields: only the widgets' fields; anything else posted is kept to be refused by the schema. */
export function bodyFromForm(widgets: readonly Widget[], posted: Record<string, unknown>): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const known = new Set(widgets.map((w) => w.name));
  for (const widget of widgets) {
    const value = fromForm(widget, posted[widget.name]);
    if (value !== undefined) body[widget.name] = value;
  }
  for (const [key, value] of Object.entries(posted)) if (!known.has(key)) body[key] = last(value);
  return body;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** A stored instant as a datetime-local value in UTC. */
export function toDateTimeLocal(value: unknown): string {
  const date = value instanceof Date ? value : typeof value === 'string' ? new Date(value) : undefined;
  if (!date || Number.isNaN(date.getTime())) return '';
  return `${date.getUTCFullYear()}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}T${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}`;
}

/** The text an input starts with: the stored value, or what was posted when the form comes back with errors. */
export function inputValue(widget: Widget, value: unknown): string {
  // A password is never sent back, not even to the person who typed it into a refused form.
  if (value === undefined || value === null || widget.kind === 'password') return '';
  if (widget.kind === 'datetime')
    return value instanceof Date || !/T\d{2}:\d{2}$/.test(String(value))
      ? toDateTimeLocal(value) || String(value)
      : String(value);
  if (Array.isArray(value)) return value.map(String).join(', ');
  if (widget.kind === 'json') return typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  return String(value);
}

/** A value as a page prints it (an instant by the one formatter, framework/format.ts). */
export function display(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (isInstant(value)) return formatDateTime(value);
  if (typeof value === 'boolean') return value ? 'Yes' : 'No';
  if (Array.isArray(value)) return value.map(display).join(', ');
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}
