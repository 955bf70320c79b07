import { afterAll, describe, it } from 'vitest';
import { closeWorld } from './world.ts';
import { openWorld } from './world-template.ts';
import { pathSource, readOperations, validBody, type Operation } from './operations.ts';
import { PATH_CORPUS, QUERY_CORPUS, RUNS, SEED, Verdicts, badValues, fuzz, sweeper } from './bad-input.ts';
import { badAnswer } from './problems.ts';
import { describeExchange, type Sent } from './harness.ts';
import { fetchDocument, nothingLostNothingLeaked } from './ledger.ts';

/**
 * Bad input on every path and query parameter of every operation of the live OpenAPI document:
 * values generated from the parameter's schema (fast-check, fixed seed) and a fixed corpus. Every
 * answer is a 4xx application/problem+json with a registered code, or an accepted 2xx.
 */
const world = await openWorld();
const operations = readOperations(await fetchDocument(world), world.isOperatorPermission);
console.log(
  `bad input (parameters): seed ${SEED}, ${RUNS} generated values per parameter; replay with SECURITY_SEED=${SEED}`,
);

afterAll(async () => {
  console.log(
    `bad input (parameters): ${operations.length} operations, ${world.client.requests} requests, seed ${SEED}`,
  );
  await closeWorld(world);
});

/** Percent-encodes any text, lone surrogates included (they go as U+FFFD, the corpus sends the raw bytes). */
const pct = (text: string) => encodeURIComponent(text.toWellFormed());
const asText = (value: unknown) => (typeof value === 'string' ? value : (JSON.stringify(value) ?? 'undefined'));

function request(op: Operation, path: Record<string, string>, query: string): Sent {
  const { tenant, cookie } = sweeper(op, world);
  let url = op.path;
  for (const p of op.params.filter((x) => x.in === 'path'))
    url = url.replace(`{${p.name}}`, path[p.name] ?? pct(pathSource(op, p.name).value(world, tenant)));
  return {
    operationId: op.id,
    method: op.method,
    host: tenant.host,
    path: query ? `${url}?${query}` : url,
    ...(cookie ? { cookie } : {}),
    ...validBody(op, world, tenant),
  };
}

const withParams = operations.filter((op) => op.params.length > 0);
describe.each(withParams.map((op) => [`${op.id} (${op.method} ${op.path})`, op] as const))('%s', (_name, op) => {
  for (const param of op.params.filter((p) => p.in === 'path')) {
    it(`path parameter {${param.name}}: the corpus (invalid UUIDs, traversal, NUL, surrogates, 1 MB) and generated values answer 4xx problem+json`, async () => {
      const verdicts = new Verdicts();
      for (const entry of PATH_CORPUS)
        await verdicts.check(world, request(op, { [param.name]: entry.raw }, ''), `{${param.name}} ${entry.label}`);
      verdicts.expectNone(op);
      await fuzz(op, `{${param.name}}`, badValues(param.schema), async (value) => {
        const req = request(op, { [param.name]: pct(asText(value)) }, '');
        const res = await world.client.send(req);
        const wrong = badAnswer(res);
        return wrong && `${wrong}: ${describeExchange(req, res)}`;
      });
    });
  }
  for (const param of op.params.filter((p) => p.in === 'query')) {
    it(`query parameter ${param.name}: the corpus (duplicates, NUL, ±2^63, ±2^53, NaN, 1 MB) and generated values answer 4xx problem+json`, async () => {
      const verdicts = new Verdicts();
      for (const entry of QUERY_CORPUS)
        await verdicts.check(world, request(op, {}, entry.raw(param.name)), `${param.name} ${entry.label}`);
      verdicts.expectNone(op);
      await fuzz(op, param.name, badValues(param.schema), async (value) => {
        const req = request(op, {}, `${param.name}=${pct(asText(value))}`);
        const res = await world.client.send(req);
        const wrong = badAnswer(res);
        return wrong && `${wrong}: ${describeExchange(req, res)}`;
      });
    });
  }
});

await nothingLostNothingLeaked(world, () => operations.length);
