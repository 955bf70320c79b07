import { randomUUID } from 'node:crypto';
import type { TSchema } from 'typebox';
import Value from 'typebox/value';

/**
 * A field kind the samples know by its schema (DateTime(), an e-mail address, a money amount): how
 * to recognise its schema and a valid value of it. The kinds are tried before the generic walk of
 * the JSON Schema, in order, so a kind of field the framework adds gets its samples from one line
 * here, and every suite deriving its bodies from the declarations (conformance, security, sqlmap)
 * follows.
 */
export interface SampleKind {
  kind: string;
  matches(schema: Readonly<Record<string, unknown>>): boolean;
  sample(schema: Readonly<Record<string, unknown>>, n: number): unknown;
}

const isString = (s: Readonly<Record<string, unknown>>) => s.type === 'string';
const hasFormat = (format: string) => (s: Readonly<Record<string, unknown>>) => isString(s) && s.format === format;
const tagOf = (n: number) => `${n}${randomUUID().slice(0, 6)}`;

/** The kinds, by schema: one line per kind. */
export const SAMPLE_KINDS: SampleKind[] = [
  { kind: 'uuid', matches: hasFormat('uuid'), sample: () => randomUUID() },
  {
    kind: 'dateTime',
    matches: hasFormat('date-time'),
    sample: (_s, n) => new Date(Date.now() + 86_400_000 + n * 1000).toISOString(),
  },
  {
    kind: 'date',
    matches: hasFormat('date'),
    sample: () => new Date(Date.now() + 86_400_000).toISOString().slice(0, 10),
  },
  { kind: 'email', matches: hasFormat('email'), sample: (_s, n) => `sample-${tagOf(n)}@example.test` },
  { kind: 'uri', matches: hasFormat('uri'), sample: (_s, n) => `https://example.test/sample-${tagOf(n)}` },
  { kind: 'url', matches: hasFormat('url'), sample: (_s, n) => `https://example.test/sample-${tagOf(n)}` },
  { kind: 'hostname', matches: hasFormat('hostname'), sample: (_s, n) => `sample-${tagOf(n)}.example.test` },
  // A currency code (ISO 4217), as a money amount's currency field declares it.
  { kind: 'currency', matches: hasFormat('iso4217'), sample: () => 'EUR' },
];

/**
 * Derives a valid value from a JSON Schema (as TypeBox builds them), so the conformance suite can
 * create and change rows of any entity without knowing it. `n` varies the value: strings and
 * numbers differ between calls, so unique keys stay unique. Honours const, examples, the known
 * field kinds (SAMPLE_KINDS: uuid, date-time, date, email, uri, hostname), enum, anyOf/oneOf, type
 * lists, string length and patterns tried against a few candidates, numeric bounds and
 * multipleOf, arrays (minItems, uniqueItems) and objects.
 */
export function sampleValue(schema: TSchema, n: number, where = 'value'): unknown {
  const s = schema as Record<string, unknown>;
  if ('const' in s) return s.const;
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[n % s.examples.length];
  const kind = SAMPLE_KINDS.find((k) => k.matches(s));
  if (kind) return kind.sample(s, n);
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  const branches = (s.anyOf ?? s.oneOf) as TSchema[] | undefined;
  if (branches) {
    const usable = branches.filter((b) => (b as { type?: string }).type !== 'null');
    return sampleValue((usable[0] ?? branches[0])!, n, where);
  }
  if (Array.isArray(s.allOf)) return sampleValue(Object.assign({}, ...(s.allOf as object[])) as TSchema, n, where);
  // A type list (`["string", "null"]`, a field PATCH may clear): a value of its first non-null type.
  if (Array.isArray(s.type)) {
    const type = (s.type as string[]).find((t) => t !== 'null') ?? 'null';
    return sampleValue({ ...s, type } as TSchema, n, where);
  }
  switch (s.type) {
    case 'string':
      return sampleString(s, n, where);
    case 'integer':
    case 'number':
      return sampleNumber(s, n);
    case 'boolean':
      return true;
    case 'null':
      return null;
    case 'array': {
      const count = Math.max(Number(s.minItems ?? 1), 1);
      const limit = s.maxItems === undefined ? count : Math.min(count, Number(s.maxItems));
      return Array.from({ length: limit }, (_, i) => sampleValue(s.items as TSchema, n * 10 + i, `${where}[${i}]`));
    }
    case 'object':
      return sampleObject(schema, n, where);
    default:
      throw new Error(`cannot derive a sample for ${where}: unsupported schema ${JSON.stringify(schema)}`);
  }
}

/** Every property, optional ones included, so a create exercises every column it may write. */
export function sampleObject(
  schema: TSchema,
  n: number,
  where = 'body',
  options: { only?: readonly string[] } = {},
): Record<string, unknown> {
  const properties = ((schema as { properties?: Record<string, TSchema> }).properties ?? {}) as Record<string, TSchema>;
  const out: Record<string, unknown> = {};
  for (const [key, property] of Object.entries(properties)) {
    if (options.only && !options.only.includes(key)) continue;
    out[key] = sampleValue(property, n, `${where}.${key}`);
  }
  return out;
}

function sampleNumber(s: Record<string, unknown>, n: number): number {
  const integer = s.type === 'integer';
  let low =
    typeof s.minimum === 'number'
      ? s.minimum
      : typeof s.exclusiveMinimum === 'number'
        ? s.exclusiveMinimum + (integer ? 1 : 0.5)
        : 1;
  const high =
    typeof s.maximum === 'number'
      ? s.maximum
      : typeof s.exclusiveMaximum === 'number'
        ? s.exclusiveMaximum - (integer ? 1 : 0.5)
        : low + 1000;
  if (integer) low = Math.ceil(low);
  const span = Math.max(0, Math.floor(high - low));
  let value = low + (span > 0 ? n % (span + 1) : 0);
  const step = typeof s.multipleOf === 'number' ? s.multipleOf : undefined;
  if (step) value = Math.ceil(low / step) * step + (span >= step ? (n % Math.floor(span / step + 1)) * step : 0);
  return value;
}

function sampleString(s: Record<string, unknown>, n: number, where: string): string {
  const tag = tagOf(n);
  const min = Number(s.minLength ?? 0);
  const max = s.maxLength === undefined ? Infinity : Number(s.maxLength);
  const fitted = (text: string) => {
    let out = text;
    while (out.length < min) out += 'x';
    return out.length > max ? out.slice(out.length - max) : out;
  };
  if (typeof s.pattern === 'string') {
    const pattern = new RegExp(s.pattern as string);
    const candidates = [
      `sample-${tag}`,
      `sample${tag}`,
      `s${tag}`,
      `${tag}`,
      `Sample ${tag}`,
      `sample_${tag}`,
      `SAMPLE${tag}`.toUpperCase(),
    ];
    for (const candidate of candidates.map(fitted)) if (pattern.test(candidate)) return candidate;
    throw new Error(
      `cannot derive a sample for ${where} matching ${s.pattern}: give the field examples, or the entity an override in test/helpers/samples/overrides.ts`,
    );
  }
  return fitted(`sample ${tag}`);
}

/** A sample that the schema accepts, or a clear failure naming where derivation fell short. */
export function checkedSample(schema: TSchema, n: number, where: string): unknown {
  const value =
    (schema as { type?: string }).type === 'object' ? sampleObject(schema, n, where) : sampleValue(schema, n, where);
  if (!Value.Check(schema, value)) {
    const errors = [...Value.Errors(schema, value)].map(
      (e) => `${(e as { instancePath?: string }).instancePath ?? ''} ${e.message}`,
    );
    throw new Error(
      `derived sample for ${where} is invalid (${errors.join('; ')}): give the field examples, or the entity an override in test/helpers/samples/overrides.ts`,
    );
  }
  return value;
}
