import type { TSchema } from 'typebox';
import type { FieldMessages, FieldRule } from '../entity/field-text.ts';
import { CURRENCY_FORMAT, isCurrency } from '../entity/money.ts';

/**
 * A refused field's message for people, from the rule of its schema the value breaks: "Use 1 to
 * 200 characters", "Choose one of the options". The validator's own text ("must match pattern
 * ^…$", "must NOT have fewer than 1 characters") stays in the API's problem documents; the shell
 * works the broken rule out again from the schema and the value posted, so no validator wording
 * reaches a page. A field's FieldText.messages may say a rule better (a pattern always should).
 */

interface Node {
  type?: string | string[];
  format?: string;
  pattern?: string;
  const?: unknown;
  enum?: unknown[];
  anyOf?: Node[];
  items?: Node;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
}

/** The schema without a `| null` branch. */
function core(schema: Node): Node {
  if (schema.anyOf) {
    const rest = schema.anyOf.filter((branch) => branch.type !== 'null');
    if (rest.length === 1) return rest[0]!;
  }
  return schema;
}

const choicesOf = (node: Node): unknown[] | undefined =>
  node.enum ??
  (node.anyOf && node.anyOf.length > 0 && node.anyOf.every((b) => b.const !== undefined)
    ? node.anyOf.map((b) => b.const)
    : undefined);

const typeOf = (node: Node): string | undefined =>
  Array.isArray(node.type) ? node.type.find((t) => t !== 'null') : node.type;

/** Characters as JSON Schema counts them (code points). */
const length = (text: string): number => [...text].length;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function formatHolds(format: string, value: string): boolean {
  switch (format) {
    case 'email':
      return EMAIL.test(value);
    case 'uuid':
      return UUID.test(value);
    case 'date-time':
      return !Number.isNaN(Date.parse(value)) && /T/.test(value);
    case 'uri':
      return URL.canParse(value);
    case CURRENCY_FORMAT:
      return isCurrency(value);
    default:
      return true;
  }
}

/** The first rule the value breaks, in the order a person would fix them; undefined when the schema takes it. */
export function brokenRule(schema: TSchema, value: unknown, required: boolean): FieldRule | undefined {
  const node = core(schema as Node);
  if (value === undefined || value === null || value === '') {
    if (!required && value !== '') return undefined;
    if (value === undefined || value === null) return 'required';
  }
  const choices = choicesOf(node);
  if (choices) return choices.includes(value) ? undefined : value === '' ? 'required' : 'choice';
  switch (typeOf(node)) {
    case 'string': {
      if (typeof value !== 'string') return 'format';
      if (
        (node.minLength !== undefined && length(value) < node.minLength) ||
        (node.maxLength !== undefined && length(value) > node.maxLength)
      )
        return value === '' ? 'required' : 'length';
      if (node.format && !formatHolds(node.format, value)) return 'format';
      if (node.pattern && !new RegExp(node.pattern, 'u').test(value)) return 'pattern';
      return undefined;
    }
    case 'integer':
    case 'number': {
      if (typeof value !== 'number' || (typeOf(node) === 'integer' && !Number.isInteger(value))) return 'number';
      if ((node.minimum !== undefined && value < node.minimum) || (node.maximum !== undefined && value > node.maximum))
        return 'range';
      return undefined;
    }
    case 'array': {
      if (!Array.isArray(value)) return 'items';
      if (
        (node.minItems !== undefined && value.length < node.minItems) ||
        (node.maxItems !== undefined && value.length > node.maxItems)
      )
        return 'items';
      if (node.uniqueItems && new Set(value.map((v) => JSON.stringify(v))).size !== value.length) return 'items';
      if (node.items && value.some((item) => brokenRule(node.items as TSchema, item, true) !== undefined))
        return 'items';
      return undefined;
    }
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'choice';
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value) ? undefined : 'json';
    default:
      return undefined;
  }
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** The sentence for a broken rule of this schema; a field's own message first. */
export function ruleSentence(rule: FieldRule, schema: TSchema, messages: FieldMessages = {}, value?: unknown): string {
  const own = messages[rule];
  if (own) return own;
  const node = core(schema as Node);
  const whole = typeOf(node) === 'integer';
  switch (rule) {
    case 'required':
      return choicesOf(node) ? 'Choose one of the options.' : (messages.reference ?? 'Fill in this field.');
    case 'length':
      if (node.minLength !== undefined && node.maxLength !== undefined)
        return `Use ${node.minLength} to ${node.maxLength} characters.`;
      if (node.maxLength !== undefined) return `Use at most ${plural(node.maxLength, 'character', 'characters')}.`;
      return `Use at least ${plural(node.minLength ?? 1, 'character', 'characters')}.`;
    case 'pattern':
      return 'Use the form described under the field.';
    case 'format':
      switch (node.format) {
        case 'email':
          return 'Enter an email address, like name@example.com.';
        case 'date-time':
          return 'Enter a date and a time.';
        case 'uuid':
          return messages.reference ?? 'Choose an existing record.';
        case 'uri':
          return 'Enter a web address, like https://example.com/.';
        case CURRENCY_FORMAT:
          return 'Enter the three-letter code of a currency in use, like EUR, USD or JPY.';
        default:
          return 'Enter a value of the kind described under the field.';
      }
    case 'choice':
      return 'Choose one of the options.';
    case 'number':
      return whole ? 'Enter a whole number.' : 'Enter a number.';
    case 'range': {
      const kind = whole ? 'a whole number' : 'a number';
      if (node.minimum !== undefined && node.maximum !== undefined)
        return `Enter ${kind} from ${node.minimum} to ${node.maximum}.`;
      if (node.minimum !== undefined) return `Enter ${kind} of at least ${node.minimum}.`;
      return `Enter ${kind} of at most ${node.maximum}.`;
    }
    case 'items': {
      const list = Array.isArray(value) ? value : [];
      // An array of enumerated values is ticked in boxes, not typed.
      const boxes = node.items !== undefined && choicesOf(core(node.items as Node)) !== undefined;
      if (node.minItems !== undefined && list.length < node.minItems)
        return boxes
          ? `Tick at least ${plural(node.minItems, 'option', 'options')}.`
          : `Give at least ${plural(node.minItems, 'value', 'values')}, separated by commas.`;
      if (node.maxItems !== undefined && list.length > node.maxItems)
        return boxes
          ? `Tick at most ${plural(node.maxItems, 'option', 'options')}.`
          : `Give at most ${plural(node.maxItems, 'value', 'values')}.`;
      if (node.uniqueItems && new Set(list.map((v) => JSON.stringify(v))).size !== list.length)
        return 'Give each value once.';
      const item = node.items ? list.find((v) => brokenRule(node.items as TSchema, v, true) !== undefined) : undefined;
      if (node.items && item !== undefined) {
        const shown = String(item).length > 24 ? `${String(item).slice(0, 24)}…` : String(item);
        return `“${shown}”: ${ruleSentence(brokenRule(node.items as TSchema, item, true)!, node.items as TSchema, {}, item)}`;
      }
      return 'Give the values separated by commas.';
    }
    case 'json':
      return 'Enter the value as JSON, like {"name": "value"}.';
    case 'reference':
      return messages.reference ?? 'Choose an existing record.';
    default:
      return 'Check this value.';
  }
}

/**
 * What a page shows beside a refused field: the sentence of the rule the value breaks, else (the
 * schema takes it, a business rule refused it) the service's own message when it reads as a
 * sentence for people, else a plain "This value is not accepted."
 */
export function fieldMessage(
  schema: TSchema | undefined,
  value: unknown,
  required: boolean,
  messages: FieldMessages | undefined,
  serviceMessage: string,
): string {
  // A field the service refused while the form sent none was required there.
  const rule = schema ? brokenRule(schema, value, required || value === undefined) : undefined;
  if (rule && schema) return ruleSentence(rule, schema, messages, value);
  return asSentence(serviceMessage) ?? 'This value is not accepted.';
}

/**
 * Text a person should not be shown: problem codes, validator wording, regular expressions, JSON
 * pointers, HTTP statuses. The admin shell passes the service's messages through this before
 * showing them; the text-scan test (test/admin/plain-language.test.ts) checks the rendered pages.
 */
export function looksLikeCode(text: string): boolean {
  return (
    /[A-Z][A-Z0-9]*_[A-Z0-9_]+|\b[A-Z]{6,}\b|\bErr[A-Z]/.test(text) ||
    /\bmust (?:match|not have|have|be equal|be (?:string|integer|number|boolean|object|array))/i.test(text) ||
    /\^\S*\$/.test(text) ||
    /\b\d{3} [A-Z]/.test(text) ||
    /(?:^|\s)\/(?:body|query|params)\b/.test(text) ||
    /\b[a-z]+[A-Z]\w*:/.test(text) ||
    /\b(?:GET|POST|PUT|PATCH|DELETE)\s+[./]|\{id\}|\/api\/v\d/.test(text)
  );
}

/** A service message as a sentence (capital first, full stop last), or undefined when it does not read as one. */
export function asSentence(text: string | undefined): string | undefined {
  // A stored value named in a message (in_progress) reads as words.
  const trimmed = text?.trim().replace(/\b([a-z]+)_([a-z]+)\b/g, '$1 $2');
  if (!trimmed || looksLikeCode(trimmed)) return undefined;
  const capital = trimmed.replace(/^./, (c) => c.toUpperCase());
  return /[.!?]$/.test(capital) ? capital : `${capital}.`;
}
