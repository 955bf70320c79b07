import fc from 'fast-check';
import type { TSchema } from 'typebox';
import type { Sent } from './harness.ts';
import { describeExchange } from './harness.ts';
import { badAnswer } from './problems.ts';
import { homeTenants, validBody, validRequest, type Operation } from './operations.ts';
import type { TenantWorld, World } from './world.ts';

/**
 * Bad input, generated from each parameter's and body field's JSON schema with fast-check, plus a
 * fixed corpus. One seed for the whole run, printed: SECURITY_SEED=<seed> replays a failure.
 */
export const SEED = Number(process.env.SECURITY_SEED ?? 20261122);
/** fast-check runs per parameter or field: bounded so the sweep stays a few minutes on two cores. */
export const RUNS = Number(process.env.SECURITY_RUNS ?? 8);

type Schema = Record<string, unknown>;
const MB = 1_000_000;

/** Any UTF-16 code unit, lone surrogates included. */
const anyUnit = fc.nat(0xffff).map((c) => String.fromCharCode(c));
const wrongType = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.string({ unit: anyUnit, maxLength: 40 }),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
);

/** Values that break the schema (and some random ones that may fit by chance). */
export function badValues(schema: TSchema): fc.Arbitrary<unknown> {
  const s = schema as Schema;
  const arbs: fc.Arbitrary<unknown>[] = [wrongType, fc.jsonValue({ maxDepth: 3 })];
  const type = s.type ?? (Array.isArray(s.enum) || s.anyOf ? 'string' : undefined);
  if (type === 'string') {
    arbs.push(fc.string({ unit: anyUnit, maxLength: 80 }), fc.string({ unit: 'binary', maxLength: 80 }));
    if (typeof s.maxLength === 'number' && s.maxLength < 5000)
      arbs.push(fc.string({ minLength: s.maxLength + 1, maxLength: s.maxLength + 20 }));
    if (typeof s.minLength === 'number' && s.minLength > 0) arbs.push(fc.string({ maxLength: s.minLength - 1 }));
    if (s.format === 'uuid')
      arbs.push(
        fc.uuid(),
        fc.uuid().map((u) => u.toUpperCase()),
        fc.uuid().map((u) => `${u}x`),
      );
    if (s.format === 'email')
      arbs.push(
        fc.emailAddress(),
        fc.emailAddress().map((e) => `${e}\u0000`),
      );
    if (s.format === 'date-time')
      arbs.push(
        fc.date({ noInvalidDate: true }).map((d) => d.toISOString().slice(0, 19)),
        fc.integer().map(String),
      );
  }
  if (type === 'integer' || type === 'number') {
    const max = typeof s.maximum === 'number' ? s.maximum : Number.MAX_SAFE_INTEGER;
    const min = typeof s.minimum === 'number' ? s.minimum : Number.MIN_SAFE_INTEGER;
    arbs.push(
      fc.double(),
      fc.integer({ min: max, max: Number.MAX_SAFE_INTEGER }).map((n) => n + 1),
      fc.integer({ min: Number.MIN_SAFE_INTEGER, max: min }).map((n) => n - 1),
      fc.bigInt().map(String),
    );
  }
  if (type === 'array') {
    const items = (s.items ?? {}) as TSchema;
    arbs.push(fc.array(badValues(items), { maxLength: 4 }));
    if (typeof s.maxItems === 'number' && s.maxItems <= 200)
      arbs.push(
        fc.array(fc.string({ minLength: 1, maxLength: 4 }), { minLength: s.maxItems + 1, maxLength: s.maxItems + 2 }),
      );
  }
  return fc.oneof(...arbs);
}

/** A body field's fixed corpus, as raw JSON text (so numbers past doubles and `__proto__` keys arrive as written). */
/** `refused`: never accepted, whatever the operation (a prototype key never reaches a handler). */
export const FIELD_CORPUS: { label: string; raw: string; refused?: true }[] = [
  { label: 'NUL', raw: JSON.stringify('a\u0000b') },
  { label: 'control characters', raw: JSON.stringify('\u0001\u0007\u0008\u001b[31m\u007f\u0085\r\n') },
  { label: 'lone high surrogate', raw: '"\\ud800"' },
  { label: 'lone low surrogate', raw: '"x\\udfffy"' },
  { label: '1 MB string', raw: JSON.stringify('x'.repeat(MB)) },
  { label: 'RTL override', raw: JSON.stringify('\u202Etxt.exe\u202C') },
  { label: 'homoglyph (Cyrillic a)', raw: JSON.stringify('\u0430dmin') },
  { label: 'zero-width and ligature', raw: JSON.stringify('a\u200Bb\uFB01\uFEFF') },
  { label: '2^63', raw: '9223372036854775808' },
  { label: '-2^63', raw: '-9223372036854775808' },
  { label: '2^53', raw: '9007199254740992' },
  { label: '-2^53', raw: '-9007199254740992' },
  { label: '2^53+1', raw: '9007199254740993' },
  { label: '1e309', raw: '1e309' },
  { label: '-0', raw: '-0' },
  { label: '"NaN" as a string', raw: '"NaN"' },
  { label: '"Infinity" as a string', raw: '"Infinity"' },
  { label: 'true', raw: 'true' },
  { label: 'null', raw: 'null' },
  { label: 'empty string', raw: '""' },
  { label: 'empty object', raw: '{}' },
  { label: 'array', raw: '[1,"a",null]' },
  { label: '__proto__ object', raw: '{"__proto__":{"isAdmin":true}}', refused: true },
  { label: 'constructor.prototype object', raw: '{"constructor":{"prototype":{"isAdmin":true}}}', refused: true },
  { label: '100k-deep nesting', raw: `${'['.repeat(100_000)}${']'.repeat(100_000)}` },
];

/** Whole bodies: what arrives instead of the JSON object the operation declares. */
export function bodyCorpus(
  base: Record<string, unknown>,
): { label: string; body: string | Buffer; type?: string; refused?: true }[] {
  const text = JSON.stringify(base);
  const inner = text.slice(1, -1);
  const comma = inner === '' ? '' : `${inner},`;
  return [
    { label: 'empty body with a JSON content type', body: '', type: 'application/json' },
    { label: 'empty body without a content type', body: '' },
    {
      label: 'malformed JSON (cut short)',
      body: text.slice(0, Math.max(1, text.length - 2)),
      type: 'application/json',
    },
    { label: 'malformed JSON (single quotes)', body: "{'a': 1}", type: 'application/json' },
    { label: 'JSON with a trailing comma', body: `{${comma}}`.replace(/,}$/, ',}'), type: 'application/json' },
    { label: 'an array where the object belongs', body: `[${text}]`, type: 'application/json' },
    { label: 'a string where the object belongs', body: '"body"', type: 'application/json' },
    { label: 'a number where the object belongs', body: '9223372036854775808', type: 'application/json' },
    { label: 'null where the object belongs', body: 'null', type: 'application/json' },
    {
      label: '__proto__ key',
      body: `{${comma}"__proto__":{"isAdmin":true,"permissions":["*"]}}`,
      type: 'application/json',
      refused: true,
    },
    {
      label: 'constructor and prototype keys',
      body: `{${comma}"constructor":{"prototype":{"isAdmin":true}},"prototype":{"x":1}}`,
      type: 'application/json',
      refused: true,
    },
    { label: 'duplicated keys', body: `{${comma}${inner}}`, type: 'application/json' },
    {
      label: '100k-deep nesting as the body',
      body: `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`,
      type: 'application/json',
    },
    { label: 'text/plain content type', body: text, type: 'text/plain' },
    { label: 'form-encoded content type', body: 'a=1&b=2', type: 'application/x-www-form-urlencoded' },
    { label: 'XML content type', body: '<a>1</a>', type: 'application/xml' },
    { label: 'multipart content type without a boundary', body: text, type: 'multipart/form-data' },
    { label: 'JSON with a bogus charset', body: text, type: 'application/json; charset=ebcdic' },
    { label: 'UTF-16 bytes declared as JSON', body: Buffer.from(text, 'utf16le'), type: 'application/json' },
    {
      label: 'invalid UTF-8 bytes',
      body: Buffer.concat([Buffer.from(text.slice(0, -1)), Buffer.from([0xc0, 0xaf, 0xff]), Buffer.from('}')]),
      type: 'application/json',
    },
  ];
}

/** A path parameter's fixed corpus, written as it goes on the wire (already percent-encoded where it must be). */
export const PATH_CORPUS: { label: string; raw: string }[] = [
  { label: 'not a UUID', raw: 'not-a-uuid' },
  { label: 'UUID with a bad digit', raw: '00000000-0000-0000-0000-00000000000g' },
  { label: 'UUID in braces', raw: '%7B00000000-0000-0000-0000-000000000000%7D' },
  { label: 'nil UUID', raw: '00000000-0000-0000-0000-000000000000' },
  { label: 'integer id', raw: '1' },
  { label: 'negative 2^63', raw: '-9223372036854775808' },
  { label: 'NaN', raw: 'NaN' },
  { label: 'dot-dot', raw: '..' },
  { label: 'encoded traversal', raw: '..%2F..%2F..%2Fetc%2Fpasswd' },
  { label: 'double-encoded traversal', raw: '%252e%252e%252fetc%252fpasswd' },
  { label: 'backslash traversal', raw: '..%5C..%5Cwindows' },
  { label: 'overlong UTF-8 dots', raw: '%C0%AE%C0%AE%C0%AF' },
  { label: 'NUL', raw: 'a%00b' },
  { label: 'lone surrogate (CESU bytes)', raw: '%ED%A0%80' },
  { label: 'bad percent-encoding', raw: '%zz%' },
  { label: 'RTL and homoglyphs', raw: encodeURIComponent('\u202E\u0430dmin') },
  { label: 'SQL quote', raw: encodeURIComponent("1' or '1'='1") },
  { label: '101 characters', raw: 'a'.repeat(101) },
  { label: '1 MB', raw: 'a'.repeat(MB) },
];

/** A query parameter's fixed corpus, written as it goes on the wire; `name` is replaced by the parameter. */
export const QUERY_CORPUS: { label: string; raw: (name: string) => string }[] = [
  { label: 'duplicated', raw: (n) => `${n}=1&${n}=2` },
  { label: 'duplicated, one empty', raw: (n) => `${n}=&${n}=x` },
  { label: 'array syntax', raw: (n) => `${n}[]=1&${n}[]=2` },
  { label: 'object syntax', raw: (n) => `${n}[a]=1` },
  { label: 'empty', raw: (n) => `${n}=` },
  { label: 'no value', raw: (n) => n },
  { label: 'NUL', raw: (n) => `${n}=a%00b` },
  { label: 'lone surrogate (CESU bytes)', raw: (n) => `${n}=%ED%A0%80` },
  { label: 'bad percent-encoding', raw: (n) => `${n}=%zz` },
  { label: '2^63', raw: (n) => `${n}=9223372036854775808` },
  { label: '-2^63', raw: (n) => `${n}=-9223372036854775808` },
  { label: '2^53', raw: (n) => `${n}=9007199254740992` },
  { label: '-2^53', raw: (n) => `${n}=-9007199254740992` },
  { label: '"NaN"', raw: (n) => `${n}=NaN` },
  { label: 'Infinity', raw: (n) => `${n}=Infinity` },
  { label: 'float', raw: (n) => `${n}=1.5` },
  { label: 'hex', raw: (n) => `${n}=0x10` },
  { label: 'RTL and homoglyphs', raw: (n) => `${n}=${encodeURIComponent('\u202E\u0430dmin')}` },
  { label: 'SQL quote', raw: (n) => `${n}=${encodeURIComponent("1' or '1'='1")}` },
  { label: '__proto__', raw: () => '__proto__[x]=1&constructor[prototype][x]=1' },
  { label: '10 kB', raw: (n) => `${n}=${'a'.repeat(10_000)}` },
  { label: '1 MB', raw: (n) => `${n}=${'a'.repeat(MB)}` },
];

/** Who sends the sweep: the admin where the operation lives (no cookie for sign-out, so the sweep keeps its session). */
export function sweeper(op: Operation, world: World): { tenant: TenantWorld; cookie: string | undefined } {
  const tenant = homeTenants(op, world)[0]!;
  return { tenant, cookie: op.access === 'optional' || op.access === 'public' ? undefined : tenant.admin.cookie };
}

/** Collects the answers that break the rule; the test fails with all of them listed. */
export class Verdicts {
  readonly failures: string[] = [];
  sent = 0;
  async check(world: World, req: Sent, what: string, refused = false): Promise<void> {
    this.sent++;
    let res: Awaited<ReturnType<World['client']['send']>>;
    try {
      res = await world.client.send(req);
    } catch (err) {
      this.failures.push(`${what}: the connection failed (${(err as Error).message})`);
      return;
    }
    const wrong =
      badAnswer(res) ??
      (refused && res.status < 400 ? `accepted (${res.status}) although it must be refused` : undefined);
    if (wrong) this.failures.push(`${what}: ${wrong} — ${describeExchange(req, res)}`);
  }
  expectNone(op: Operation): void {
    if (this.failures.length > 0) {
      throw new Error(
        `${op.id}: ${this.failures.length} answers that are not a 4xx problem with a stable code (seed ${SEED}):\n${this.failures.join('\n')}`,
      );
    }
  }
}

/** Runs a fast-check property for one input slot; a failure names the seed and the counterexample. */
export async function fuzz(
  op: Operation,
  slot: string,
  arb: fc.Arbitrary<unknown>,
  send: (value: unknown) => Promise<string | undefined>,
): Promise<void> {
  await fc
    .assert(
      fc.asyncProperty(arb, async (value) => {
        const wrong = await send(value);
        if (wrong) throw new Error(wrong);
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    )
    .catch((err: Error) => {
      throw new Error(`${op.id} ${slot}: ${err.message}\nreplay: SECURITY_SEED=${SEED} npx vitest run test/security/`);
    });
}

/** The base request for the sweep of one operation. */
export function baseRequest(op: Operation, world: World): Sent {
  const { tenant, cookie } = sweeper(op, world);
  return validRequest(op, world, tenant, cookie);
}

export function baseBody(op: Operation, world: World): Record<string, unknown> {
  const { tenant } = sweeper(op, world);
  return (validBody(op, world, tenant).json ?? {}) as Record<string, unknown>;
}
