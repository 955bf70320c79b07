import { randomUUID } from 'node:crypto';
import { afterAll, describe, it } from 'vitest';
import { closeWorld } from './world.ts';
import { openWorld } from './world-template.ts';
import { pathSource, readOperations, validRequest } from './operations.ts';
import {
  FIELD_CORPUS,
  RUNS,
  SEED,
  Verdicts,
  badValues,
  baseBody,
  baseRequest,
  bodyCorpus,
  fuzz,
  sweeper,
} from './bad-input.ts';
import { badAnswer } from './problems.ts';
import { describeExchange, type Sent } from './harness.ts';
import { fetchDocument, nothingLostNothingLeaked } from './ledger.ts';
import type { TSchema } from 'typebox';

/**
 * Bad input on every request body field of every operation of the live OpenAPI document (values
 * generated from the field's schema with fast-check, fixed seed, and a fixed corpus), and whole
 * bodies that are not what the operation declares: empty, malformed, wrong content types, arrays,
 * prototype keys, 100k-deep nesting. Every answer is a 4xx application/problem+json with a
 * registered code, or an accepted 2xx (which the ledger then accounts for).
 */
const world = await openWorld();
const operations = readOperations(await fetchDocument(world), world.isOperatorPermission);
console.log(`bad input (bodies): seed ${SEED}, ${RUNS} generated values per field; replay with SECURITY_SEED=${SEED}`);

afterAll(async () => {
  console.log(`bad input (bodies): ${operations.length} operations, ${world.client.requests} requests, seed ${SEED}`);
  await closeWorld(world);
});

/** The base body with one field written as raw JSON text. */
function bodyWith(base: Record<string, unknown>, field: string, raw: string): string {
  const others = Object.entries(base)
    .filter(([k]) => k !== field)
    .map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`);
  return `{${[...others, `${JSON.stringify(field)}:${raw}`].join(',')}}`;
}

const jsonOps = operations.filter((op) => op.body?.contentType === 'application/json');
const multipartOps = operations.filter((op) => op.body?.contentType === 'multipart/form-data');
const bodyless = operations.filter((op) => op.stateChanging && !op.body);

describe.each(jsonOps.map((op) => [`${op.id} (${op.method} ${op.path})`, op] as const))('%s', (_name, op) => {
  const properties = Object.entries((op.body!.schema as { properties?: Record<string, TSchema> }).properties ?? {});
  const send = async (
    body: string | Buffer,
    type?: string,
  ): Promise<[Sent, Awaited<ReturnType<typeof world.client.send>>]> => {
    const req: Sent = {
      ...baseRequest(op, world),
      json: undefined,
      body,
      headers: type ? { 'content-type': type } : {},
    };
    return [req, await world.client.send(req)];
  };

  for (const [field, schema] of properties) {
    it(`body field ${field}: the corpus (NUL, surrogates, 1 MB, RTL, ±2^63, ±2^53, "NaN", wrong types, prototype keys, 100k-deep) and generated values answer 4xx problem+json`, async () => {
      const verdicts = new Verdicts();
      for (const entry of FIELD_CORPUS) {
        const req: Sent = {
          ...baseRequest(op, world),
          json: undefined,
          body: bodyWith(baseBody(op, world), field, entry.raw),
          headers: { 'content-type': 'application/json' },
        };
        await verdicts.check(world, req, `${field} = ${entry.label}`, entry.refused);
      }
      verdicts.expectNone(op);
      await fuzz(op, field, badValues(schema), async (value) => {
        const [req, res] = await send(
          bodyWith(baseBody(op, world), field, JSON.stringify(value) ?? 'null'),
          'application/json',
        );
        const wrong = badAnswer(res);
        return wrong && `${wrong}: ${describeExchange(req, res)}`;
      });
    });
  }

  it('the whole body: empty, malformed, an array or scalar for the object, prototype keys, duplicated keys, 100k-deep, wrong content types, bad bytes', async () => {
    const verdicts = new Verdicts();
    for (const entry of bodyCorpus(baseBody(op, world))) {
      const req: Sent = {
        ...baseRequest(op, world),
        json: undefined,
        body: entry.body,
        headers: entry.type ? { 'content-type': entry.type } : {},
      };
      await verdicts.check(world, req, entry.label, entry.refused);
    }
    verdicts.expectNone(op);
  });
});

describe.each(multipartOps.map((op) => [`${op.id} (${op.method} ${op.path})`, op] as const))('%s', (_name, op) => {
  it('the multipart body: no file part, a bad or overlong media type, traversal and NUL in the file name, JSON instead of a form, broken boundaries', async () => {
    const verdicts = new Verdicts();
    const b = `----sec${randomUUID()}`;
    const part = (headers: string, bytes: string) => `--${b}\r\n${headers}\r\n\r\n${bytes}\r\n`;
    const forms: [string, string, string?][] = [
      ['no file part', `${part('Content-Disposition: form-data; name="other"', 'x')}--${b}--\r\n`],
      [
        'file part under another name',
        `${part('Content-Disposition: form-data; name="upload"; filename="a.txt"\r\nContent-Type: text/plain', 'x')}--${b}--\r\n`,
      ],
      [
        'media type that is not one',
        `${part('Content-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: not a type', 'x')}--${b}--\r\n`,
      ],
      [
        'overlong media type',
        `${part(`Content-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/${'x'.repeat(300)}`, 'x')}--${b}--\r\n`,
      ],
      [
        'renderable type with other bytes',
        `${part('Content-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png', '<script>alert(1)</script>')}--${b}--\r\n`,
      ],
      [
        'traversal in the file name',
        `${part('Content-Disposition: form-data; name="file"; filename="../../../etc/passwd"\r\nContent-Type: text/plain', 'x')}--${b}--\r\n`,
      ],
      [
        'NUL and RTL in the file name',
        `${part('Content-Disposition: form-data; name="file"; filename="a\u0000\u202Egpj.exe"\r\nContent-Type: text/plain', 'x')}--${b}--\r\n`,
      ],
      [
        'two file parts',
        `${part('Content-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain', 'x')}${part('Content-Disposition: form-data; name="file"; filename="b.txt"\r\nContent-Type: text/plain', 'y')}--${b}--\r\n`,
      ],
      [
        'no closing boundary',
        part('Content-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain', 'x'),
      ],
      ['empty body', ''],
      ['JSON instead of a form', '{"file":"x"}', 'application/json'],
      ['form without a boundary', 'x', 'multipart/form-data'],
      ['malformed boundary parameter', `--${b}--\r\n`, 'multipart/form-data; boundary='],
    ];
    for (const [label, body, type] of forms) {
      const req: Sent = {
        ...baseRequest(op, world),
        json: undefined,
        body,
        headers: { 'content-type': type ?? `multipart/form-data; boundary=${b}` },
      };
      await verdicts.check(world, req, label);
    }
    for (const visibility of ['PUBLIC', 'secret', '', 'public&visibility=private', '%00', '__proto__']) {
      const req = baseRequest(op, world);
      req.path = `${req.path.split('?')[0]}?visibility=${visibility}`;
      await verdicts.check(world, req, `visibility=${visibility}`);
    }
    verdicts.expectNone(op);
  });
});

describe.each(bodyless.map((op) => [`${op.id} (${op.method} ${op.path})`, op] as const))('%s', (_name, op) => {
  it('a body where none is declared: malformed JSON, a wrong content type, 100k-deep nesting, prototype keys', async () => {
    const verdicts = new Verdicts();
    const { tenant, cookie } = sweeper(op, world);
    // A fresh random id keeps a destructive operation harmless (nothing of the world is named).
    const ids = Object.fromEntries(
      op.params
        .filter((p) => p.in === 'path' && pathSource(op, p.name).scope !== 'name')
        .map((p) => [p.name, randomUUID()]),
    );
    for (const entry of bodyCorpus({}).filter((e) => !e.label.startsWith('empty'))) {
      const req: Sent = {
        ...validRequest(op, world, tenant, cookie, ids),
        body: entry.body,
        headers: entry.type ? { 'content-type': entry.type } : {},
      };
      await verdicts.check(world, req, entry.label);
    }
    verdicts.expectNone(op);
  });
});

await nothingLostNothingLeaked(world, () => operations.length);
