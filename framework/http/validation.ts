import type { FastifySchemaCompiler } from 'fastify';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import Value from 'typebox/value';
import { refusalsOf, type Refusals } from '../query/refusals.ts';
import { schemaKey } from './schema-key.ts';

/**
 * The largest integer a request may carry where its schema sets no bound of its own: the largest
 * a JavaScript number holds exactly (2^53 - 1), which a PostgreSQL bigint holds too. Beyond it a
 * value is not the one that was sent, and an offset or id past bigint's range would reach the
 * database as an error. A column narrower than bigint refuses a larger value as 422 as well
 * (out-of-range errors map to VALIDATION_FAILED).
 */
export const INTEGER_LIMIT = Number.MAX_SAFE_INTEGER;

export interface ValidationIssue {
  instancePath: string;
  keyword: string;
  message: string;
  schemaPath?: string;
  params?: object;
}

// Values of these keywords are data, not schemas: never bounded.
const DATA_KEYWORDS = new Set(['default', 'const', 'enum', 'examples', 'example']);

const isPlain = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
};

const isInteger = (node: Record<string, unknown>) =>
  node.type === 'integer' || (Array.isArray(node.type) && node.type.includes('integer'));

/**
 * A copy of the schema in which every integer without a maximum (or minimum) gets one of
 * ±INTEGER_LIMIT. The copy keeps TypeBox's own (non-enumerable) markers.
 */
export function boundIntegers<T>(schema: T): T {
  if (Array.isArray(schema)) return schema.map((item) => boundIntegers(item)) as T;
  if (!isPlain(schema)) return schema;
  const copy = Object.create(Object.getPrototypeOf(schema), Object.getOwnPropertyDescriptors(schema)) as Record<
    string,
    unknown
  >;
  for (const key of Object.keys(copy)) {
    if (!DATA_KEYWORDS.has(key)) copy[key] = boundIntegers(copy[key]);
  }
  if (isInteger(copy)) {
    if (copy.maximum === undefined && copy.exclusiveMaximum === undefined) copy.maximum = INTEGER_LIMIT;
    if (copy.minimum === undefined && copy.exclusiveMinimum === undefined) copy.minimum = -INTEGER_LIMIT;
  }
  return copy as T;
}

const pointerSegment = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');

/** Whether any string or property name in value holds U+0000: nulIssues' question, with no paths built. */
function containsNul(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const node = pending.pop();
    if (typeof node === 'string') {
      if (node.includes('\u0000')) return true;
    } else if (Array.isArray(node)) {
      for (const item of node) pending.push(item);
    } else if (typeof node === 'object' && node !== null && !ArrayBuffer.isView(node)) {
      for (const key of Object.keys(node)) {
        if (key.includes('\u0000')) return true;
        pending.push((node as Record<string, unknown>)[key]);
      }
    }
  }
  return false;
}

/**
 * Every string (and property name) holding U+0000, which no PostgreSQL text or jsonb value can
 * store: found here, it is a 422 instead of a database error. The walk keeps its own stack rather
 * than recursing: a body nested 100,000 levels deep would otherwise overflow the call stack (a
 * 500) before the schema refused it.
 */
export function nulIssues(value: unknown, at = '', found: ValidationIssue[] = []): ValidationIssue[] {
  // An entry is a value to walk, or (name: true) a property name already known to hold NUL.
  const pending: { node: unknown; path: string; name?: true }[] = [{ node: value, path: at }];
  while (pending.length > 0) {
    const { node, path, name } = pending.pop()!;
    if (name) {
      found.push({
        instancePath: path,
        keyword: 'nul',
        message: 'property name must not contain the NUL character (U+0000)',
      });
    } else if (typeof node === 'string') {
      if (node.includes('\u0000'))
        found.push({ instancePath: path, keyword: 'nul', message: 'must not contain the NUL character (U+0000)' });
    } else if (Array.isArray(node)) {
      // Children go on the stack last-first, so issues come out in document order.
      for (let i = node.length - 1; i >= 0; i--) pending.push({ node: node[i], path: `${path}/${i}` });
    } else if (typeof node === 'object' && node !== null && !ArrayBuffer.isView(node)) {
      // Query strings are parsed into objects of a prototype of their own: any object is walked.
      const keys = Object.keys(node);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!;
        const child = `${path}/${pointerSegment(key)}`;
        pending.push({ node: (node as Record<string, unknown>)[key], path: child });
        if (key.includes('\u0000')) pending.push({ node: undefined, path: child, name: true });
      }
    }
  }
  return found;
}

/** An integer written in a query string or a path: decimal digits, with a minus sign for a negative one. */
const DECIMAL_INTEGER = /^-?[0-9]+$/;

/**
 * The properties of a query or params schema that take an integer. Their text must be decimal
 * digits: TypeBox's conversion reads text as JavaScript does, so "1.5" became 1, "0x10" 16 and
 * "1e2" 100 rather than being refused.
 */
function integerProperties(schema: unknown): string[] {
  return propertiesWhere(
    schema,
    (node) => isInteger(node) || (Array.isArray(node.anyOf) && node.anyOf.some((m) => isPlain(m) && isInteger(m))),
  );
}

/** The keys of a query or params schema's properties whose schema passes `keep`. */
function propertiesWhere(schema: unknown, keep: (node: Record<string, unknown>) => boolean): string[] {
  const properties = isPlain(schema) && isPlain(schema.properties) ? schema.properties : {};
  return Object.keys(properties).filter((key) => {
    const node = properties[key];
    return isPlain(node) && keep(node);
  });
}

/** Each integer property whose text is not decimal digits. */
function nonDecimalIssues(value: unknown, keys: readonly string[]): ValidationIssue[] {
  if (keys.length === 0 || typeof value !== 'object' || value === null) return [];
  const found: ValidationIssue[] = [];
  for (const key of keys) {
    const text = (value as Record<string, unknown>)[key];
    if (typeof text === 'string' && !DECIMAL_INTEGER.test(text))
      found.push({
        instancePath: `/${pointerSegment(key)}`,
        keyword: 'type',
        message: 'must be an integer written in decimal digits (0-9, a leading - for a negative one)',
      });
  }
  return found;
}

/**
 * The defaults of a query or params schema, when each is a property's own (`limit`'s 20, `sort`'s
 * `createdAt`), as [property, value] pairs; undefined when a default sits anywhere else (inside a
 * property, on the object itself), which only TypeBox's Default walk fills.
 */
export function propertyDefaults(schema: unknown): (readonly [string, unknown])[] | undefined {
  if (!JSON.stringify(schema).includes('"default"')) return [];
  if (!isPlain(schema)) return undefined;
  const { properties, ...rest } = schema;
  if (properties !== undefined && !isPlain(properties)) return undefined;
  if (JSON.stringify(rest).includes('"default"')) return undefined;
  const found: (readonly [string, unknown])[] = [];
  for (const [key, node] of Object.entries(properties ?? {})) {
    if (!isPlain(node)) return undefined;
    const { default: value, ...own } = node;
    if (JSON.stringify(own).includes('"default"')) return undefined;
    if ('default' in node) found.push([key, value]);
  }
  return found;
}

/**
 * The properties of a query or params schema that are an integer and nothing else (no union), whose
 * decimal text TypeBox's Convert turns into the number it reads (`+text`, truncated: already whole).
 */
function plainIntegerProperties(schema: unknown): string[] {
  return propertiesWhere(schema, (node) => node.type === 'integer');
}

/**
 * A copy of the parsed text with each default of a property it leaves out, and the decimal text of
 * each plain integer property as its number, as TypeBox's Default and Convert would make them;
 * the text itself when there is nothing to fill or convert; undefined when it is no object.
 */
function withDefaults(
  value: unknown,
  defaults: readonly (readonly [string, unknown])[],
  integers: readonly string[],
): unknown {
  if (defaults.length === 0 && integers.length === 0) return value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  let filled: Record<string, unknown> | undefined;
  for (const key of integers) {
    const text = (value as Record<string, unknown>)[key];
    if (typeof text !== 'string' || !DECIMAL_INTEGER.test(text)) continue;
    filled ??= { ...value };
    filled[key] = +text;
  }
  if (defaults.length === 0) return filled ?? value;
  filled ??= { ...value };
  for (const [key, fallback] of defaults) {
    if (filled[key] === undefined) filled[key] = typeof fallback === 'object' ? structuredClone(fallback) : fallback;
  }
  return filled;
}

/**
 * TypeBox validation for every route: bodies are checked as sent (unknown properties refused,
 * nothing silently dropped), while params and query strings are converted from text and get
 * their defaults; an integer there is decimal digits only. Whatever the schema, a string holding
 * NUL is refused and an integer is kept within ±INTEGER_LIMIT.
 */
export const typeboxValidatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const fromText = httpPart !== 'body';
  const key = schemaKey(fromText, schema);
  if (key === undefined) return compileValidator(schema, fromText);
  let validator = compiledValidators.get(key);
  if (!validator) {
    validator = compileValidator(schema, fromText);
    compiledValidators.set(key, validator);
  }
  return validator;
};

type Validator = ReturnType<FastifySchemaCompiler<TSchema>>;

/**
 * The validators compiled in this process, by what they were compiled from (schema-key.ts: the
 * schema, its TypeBox markers and refusal messages, and whether the value comes from text). A
 * second app built in the same process (the test files sharing a worker) and routes sharing a
 * schema (the batch's direct operations and their routes) compile nothing twice. A validator holds
 * no state: it reads a value and answers, remembering nothing.
 */
const compiledValidators = new Map<string, Validator>();
let validatorCompilations = 0;

/** How many validators this process has compiled so far (a test reads it to see reuse). */
export function validatorCompilationCount(): number {
  return validatorCompilations;
}

function compileValidator(schema: TSchema, fromText: boolean): Validator {
  validatorCompilations += 1;
  const check = Compile(boundIntegers(schema));
  const refusals = refusalsOf(schema);
  const integers = fromText ? integerProperties(schema) : [];
  // Text that already meets the schema once its defaults are in, and its plain integers' decimal
  // text read as numbers, needs no other conversion: the compiled check alone decides (GET /<id>,
  // a list's limit, filters and sort), skipping TypeBox's Convert and Default, which walk the
  // schema on every call. Only where every default is a property's own, found at boot; anything
  // else (a boolean as text, an integer in a union) falls to the full path below.
  const defaults = fromText ? propertyDefaults(schema) : undefined;
  const plainIntegers = fromText ? plainIntegerProperties(schema) : [];
  const validate = (value: unknown) => {
    if (defaults) {
      const filled = withDefaults(value, defaults, plainIntegers);
      if (filled !== undefined && check.Check(filled) && !containsNul(filled)) return { value: filled };
    }
    const notDecimal = nonDecimalIssues(value, integers);
    if (notDecimal.length > 0) return { error: notDecimal as never };
    const prepared = fromText ? Value.Default(schema, Value.Convert(schema, value)) : value;
    // The issues, with their paths, only for the rare value that has one.
    if (containsNul(prepared)) return { error: nulIssues(prepared) as never };
    if (check.Check(prepared)) return { value: prepared };
    const issues = [...check.Errors(prepared)] as ValidationIssue[];
    return { error: (refusals ? refused(issues, refusals) : issues) as never };
  };
  return (value: unknown) => {
    try {
      return validate(value);
    } catch (err) {
      // Some keywords walk a value recursively (uniqueItems compares items deeply): a value
      // nested deeper than the stack allows is refused as invalid input, not answered 500.
      if (err instanceof RangeError) return { error: [TOO_DEEP] as never };
      throw err;
    }
  };
}

/**
 * The issues as the schema's refusals word them (refusals.ts): one per refused property that
 * carries a message, saying what it accepts, and one per unknown property, saying what the
 * schema takes. Any other issue stays as it is.
 */
function refused(issues: ValidationIssue[], refusals: Refusals): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  const said = new Set<string>();
  const once = (issue: ValidationIssue) => {
    if (said.has(issue.instancePath)) return;
    said.add(issue.instancePath);
    out.push(issue);
  };
  for (const issue of issues) {
    const segment = issue.instancePath.split('/')[1];
    const name = segment?.replaceAll('~1', '/').replaceAll('~0', '~');
    const message = name === undefined ? undefined : refusals.properties.get(name);
    if (message) {
      once({ instancePath: `/${segment}`, keyword: 'refusal', message });
    } else if (issue.keyword === 'additionalProperties' && issue.instancePath === '' && refusals.unknown) {
      const extra = (issue.params as { additionalProperties?: string[] } | undefined)?.additionalProperties ?? [];
      for (const property of extra)
        once({
          instancePath: `/${pointerSegment(property)}`,
          keyword: 'unknown',
          message: `unknown parameter ${property}: ${refusals.unknown}`,
        });
    } else if (!(issue.keyword === 'boolean' && refusals.unknown)) {
      out.push(issue);
    }
  }
  return out;
}

const TOO_DEEP: ValidationIssue = { instancePath: '', keyword: 'maxDepth', message: 'is nested too deeply' };
