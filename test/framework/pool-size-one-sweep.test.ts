import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TSchema } from 'typebox';
import { createCustomer, OPERATOR_HOST, signInAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { StreamClient } from '../helpers/event-stream.ts';
import { testConfig } from '../helpers/config.ts';
import { dereferenced } from '../helpers/openapi.ts';
import { sampleObject, sampleValue } from '../helpers/samples/values.ts';

/**
 * Rule: no request can hang. With a pool of a single connection, every operation of the live
 * OpenAPI document, called by an administrator holding `*`, answers within 5 s and never with a
 * server error (a transaction waiting for a second connection would hang or time out as 503).
 * A live stream (`text/event-stream`, GET <list>/stream) never ends by design: it must answer its
 * headers within the same 5 s, and while it stays open the list it follows must still answer (a
 * stream holding the only connection would starve it).
 */

interface Operation {
  method: string;
  path: string;
  parameters?: { in: string; name: string; required?: boolean; schema?: TSchema }[];
  requestBody?: { content?: Record<string, { schema?: TSchema }> };
  responses?: Record<string, { content?: Record<string, unknown> }>;
}

const ANSWER_WITHIN_MS = 5_000;
let app: TestApp;
let operations: Operation[];
/** The app over real HTTP (127.0.0.1), for the streams: an injected request would wait for their end. */
let base: string;

beforeAll(async () => {
  app = await startTestApp({ config: testConfig({ database: { pool_size: 1 } }) });
  // A customer tenant, so the tenant routes on {id} act on one that is not the operator's.
  await createCustomer(app, 'sweep');
  base = await app.web!.listen({ port: 0, host: '127.0.0.1' });
  // Bodies are named schemas: sampled through their $refs.
  const doc = await dereferenced(
    (await app.http().get('/api/v1/openapi.json')).body as {
      paths: Record<string, Record<string, Omit<Operation, 'method' | 'path'>>>;
    },
  );
  operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods)
      .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
      .map(([method, op]) => ({ ...op, method, path })),
  );
});
afterAll(async () => {
  await app?.close();
});

/** A value the schema would plausibly take, or undefined when none can be derived. */
function sample(schema: TSchema | undefined, n: number): unknown {
  if (!schema) return undefined;
  try {
    return (schema as { type?: string }).type === 'object' ? sampleObject(schema, n) : sampleValue(schema, n);
  } catch {
    return undefined;
  }
}

/**
 * The id of a row the collection holds (its newest listed one), so a route on {id} reaches its
 * handler's real work; a random id when the collection is empty or not listable.
 */
async function someId(collection: string, cookie: string): Promise<string> {
  const res = await app.http().get(collection).set('Cookie', cookie);
  const items = (res.body as { items?: { id?: unknown }[] }).items;
  const id = items?.at(-1)?.id;
  return typeof id === 'string' ? id : randomUUID();
}

/** Whether the operation answers a live stream rather than a document. */
function isStream(op: Operation): boolean {
  return Object.values(op.responses ?? {}).some((r) => r.content?.['text/event-stream'] !== undefined);
}

/**
 * Opens a stream and, while it is open, asks the list it follows: what went wrong, if anything
 * (headers not within the limit, a 5xx, or the list starved by the open stream).
 */
async function sweepStream(
  url: string,
  cookie: string,
  forwardedFor: string,
): Promise<{ slow?: string; failed?: string }> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const opening = StreamClient.open(base, url, { host: OPERATOR_HOST, cookie, 'x-forwarded-for': forwardedFor });
  const client = await Promise.race([
    opening,
    new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), ANSWER_WITHIN_MS);
    }),
  ]).catch(() => undefined);
  clearTimeout(timer);
  const took = Date.now() - started;
  if (!client) {
    void opening.then((late) => late.close()).catch(() => undefined);
    return { slow: `GET ${url}: no headers in ${took} ms` };
  }
  try {
    if (client.status >= 500) return { failed: `GET ${url}: ${client.status} ${JSON.stringify(client.problem)}` };
    if (client.status !== 200) return {};
    if (!String(client.headers['content-type']).startsWith('text/event-stream'))
      return { failed: `GET ${url}: 200 as ${client.headers['content-type']}, not text/event-stream` };
    const list = url.slice(0, url.lastIndexOf('/stream'));
    const asked = Date.now();
    const res = await app
      .http()
      .get(list)
      .set('Cookie', cookie)
      .timeout(ANSWER_WITHIN_MS)
      .catch((err: Error) => ({ status: 0, body: { error: err.message } }));
    const listTook = Date.now() - asked;
    if (res.status === 0 || listTook >= ANSWER_WITHIN_MS)
      return { slow: `GET ${list} while ${url} is open: ${listTook} ms` };
    if (res.status >= 500) return { failed: `GET ${list} while ${url} is open: ${res.status}` };
    return {};
  } finally {
    client.close();
  }
}

async function urlOf(op: Operation, n: number, cookie: string): Promise<string> {
  let url = op.path;
  const query = new URLSearchParams();
  for (const p of op.parameters ?? []) {
    if (p.in === 'path') {
      const value =
        p.name === 'id'
          ? await someId(op.path.slice(0, op.path.indexOf('/{id}')), cookie)
          : (p.schema as { format?: string } | undefined)?.format === 'uuid'
            ? randomUUID()
            : String(sample(p.schema, n) ?? 'sample');
      url = url.replace(`{${p.name}}`, encodeURIComponent(value));
    } else if (p.in === 'query' && p.required) {
      query.set(p.name, String(sample(p.schema, n) ?? 'sample'));
    }
  }
  // Any template left (a parameter the document does not describe) gets an id.
  url = url.replace(/\{[^}]+\}/g, () => randomUUID());
  return query.size > 0 ? `${url}?${query}` : url;
}

describe('with database.pool_size 1', () => {
  it('the document lists the routes to sweep', () => {
    expect(operations.length).toBeGreaterThan(20);
    expect(operations.some((op) => op.method === 'post' && op.path === '/api/v1/auth/password')).toBe(true);
  });

  it(`every route of /api/v1/openapi.json answers within ${ANSWER_WITHIN_MS / 1000} s, never 5xx`, async () => {
    const slow: string[] = [];
    const failed: string[] = [];
    let n = 0;
    for (const op of operations) {
      n += 1;
      // A fresh administrator per call: logout or a password change ends the caller's sessions.
      const { cookie } = await signInAs(app, app.operator, ['*']);
      const url = await urlOf(op, n, cookie);
      const body = op.requestBody?.content?.['application/json']
        ? (sample(op.requestBody.content['application/json'].schema, n) ?? {})
        : undefined;
      if (op.method === 'get' && isStream(op)) {
        const { slow: late, failed: wrong } = await sweepStream(url, cookie, `198.51.100.${n % 250}`);
        if (late) slow.push(late);
        if (wrong) failed.push(wrong);
        continue;
      }
      const started = Date.now();
      const http = app.http();
      const call = (
        op.method === 'get'
          ? http.get(url)
          : op.method === 'post'
            ? http.post(url)
            : op.method === 'put'
              ? http.put(url)
              : op.method === 'patch'
                ? http.patch(url)
                : http.delete(url)
      )
        .set('Cookie', cookie)
        .set('X-Forwarded-For', `198.51.100.${n % 250}`)
        .timeout(ANSWER_WITHIN_MS);
      const res = await (body === undefined ? call : call.send(body as object)).catch((err: Error) => ({
        status: 0,
        body: { error: err.message },
      }));
      const took = Date.now() - started;
      if (res.status === 0 || took >= ANSWER_WITHIN_MS) slow.push(`${op.method.toUpperCase()} ${url}: ${took} ms`);
      else if (res.status >= 500)
        failed.push(`${op.method.toUpperCase()} ${url}: ${res.status} ${JSON.stringify(res.body)}`);
    }
    expect(slow).toEqual([]);
    expect(failed).toEqual([]);
  }, 300_000);
});
