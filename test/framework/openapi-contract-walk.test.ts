import { randomUUID } from 'node:crypto';
import { Compile } from 'typebox/compile';
import { beforeAll, describe, expect, it } from 'vitest';
import { signInAs } from '../helpers/app.ts';
import { dereferenced } from '../helpers/openapi.ts';
import { useTestApp } from '../helpers/use-test-app.ts';

/**
 * Rule: the OpenAPI document is true of every operation. Each operation the document lists is
 * called the ways a client gets wrong (no credentials, a member without the permission, an id that
 * is no id, an unknown query parameter, a body outside its schema, a body where it takes none),
 * and every answer is one the operation lists: its status, its media type, a body valid against
 * the listed schema and, where the listed answer names problem codes, one of them.
 */
type Schema = Record<string, unknown>;
interface Answer {
  description: string;
  content?: Record<string, { schema: Schema }>;
}
interface Operation {
  operationId: string;
  parameters?: { in: string; name: string; required?: boolean; schema: Schema }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, Answer>;
  'x-access'?: string;
}
interface Op extends Operation {
  method: string;
  path: string;
}

const t = useTestApp({ customers: ['walk', 'bare'] });
const HOST = 'walk.localhost';
const OPERATOR = 'operator.localhost';
const ops: Op[] = [];

beforeAll(async () => {
  const served = await t.app.web!.inject({ method: 'GET', url: '/api/v1/openapi.json', headers: { host: OPERATOR } });
  const doc = await dereferenced(served.json() as { paths: Record<string, Record<string, Operation>> });
  for (const [path, methods] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(methods)) if (path.startsWith('/api/')) ops.push({ ...op, method, path });
});

const validators = new Map<Schema, ReturnType<typeof Compile>>();
const validatorOf = (schema: Schema) => {
  let validator = validators.get(schema);
  if (!validator) validators.set(schema, (validator = Compile(schema as never)));
  return validator;
};

/** Problem codes a description names: words in capitals with underscores, and the one camel-cased code. */
const codesIn = (description: string): string[] =>
  description.match(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|ErrTooManyAttempts/g) ?? [];

/** Every way this answer disagrees with what the operation lists, as readable lines. */
function mismatches(
  op: Op,
  probe: string,
  res: { statusCode: number; headers: Record<string, unknown>; body: string },
) {
  const where = `${op.method.toUpperCase()} ${op.path} (${probe}) answered ${res.statusCode} ${res.body.slice(0, 200)}`;
  const listed = op.responses[String(res.statusCode)] ?? op.responses.default;
  if (!listed) return [`${where}: status not listed (${Object.keys(op.responses).join(', ')})`];
  const problems: string[] = [];
  const type = String(res.headers['content-type'] ?? '')
    .split(';', 1)[0]!
    .trim();
  if (res.statusCode >= 400 && type !== 'application/problem+json') problems.push(`${where}: refusal is ${type}`);
  if (!listed.content || res.body === '') return problems;
  const media = listed.content[type];
  if (!media) return [...problems, `${where}: ${type} not among ${Object.keys(listed.content).join(', ')}`];
  if (!type.endsWith('json')) return problems;
  const body = JSON.parse(res.body) as Record<string, unknown>;
  if (!validatorOf(media.schema).Check(body)) problems.push(`${where}: body outside the listed schema`);
  const codes = codesIn(listed.description);
  if (type === 'application/problem+json' && codes.length > 0 && !codes.includes(String(body.code)))
    problems.push(`${where}: code ${String(body.code)} not among ${codes.join(', ')}`);
  return problems;
}

const pathWith = (op: Op, id: string) =>
  op.path.replace(/\{(\w+)\}/g, (_, name: string) => (name === 'id' || name.endsWith('Id') ? id : 'no-such-thing'));

async function call(
  op: Op,
  probe: string,
  options: { host?: string; cookie?: string; id?: string; query?: string; body?: string },
): Promise<string[]> {
  return (await answer(op, probe, options)).problems;
}

async function answer(
  op: Op,
  probe: string,
  options: { host?: string; cookie?: string; id?: string; query?: string; body?: string },
) {
  const res = await t.app.web!.inject({
    method: op.method.toUpperCase() as 'GET',
    url: `${pathWith(op, options.id ?? randomUUID())}${options.query ?? ''}`,
    headers: {
      host: options.host ?? HOST,
      ...(options.cookie ? { cookie: options.cookie } : {}),
      ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(options.body !== undefined ? { payload: options.body } : {}),
  });
  return {
    status: res.statusCode,
    code: res.statusCode >= 400 ? (res.json() as { code?: string }).code : undefined,
    problems: mismatches(op, probe, { statusCode: res.statusCode, headers: res.headers, body: res.body }),
  };
}

/** A fresh session per request, so no probe's answer (a sign-out, a revoked session) reaches another. */
const admin = async (host: string) =>
  (await signInAs(t.app, host === OPERATOR ? t.app.operator : t.walk, ['*'])).cookie;
const member = async () => (await signInAs(t.app, t.walk, [])).cookie;
const changesState = (op: Op) => op.method !== 'get';
const operatorOnly = new Set<Op>();
/** The operator's operations are called at the operator's host: elsewhere they answer 403 AUTH_NOT_OPERATOR first. */
const hostFor = (op: Op) => (operatorOnly.has(op) ? OPERATOR : HOST);

describe('every operation answers only what the OpenAPI document lists for it', () => {
  it('the document lists operations to walk', () => {
    expect(ops.length).toBeGreaterThan(50);
  });

  it('with no credentials', async () => {
    const found: string[] = [];
    for (const op of ops) {
      if (op['x-access'] === 'public') continue;
      const res = await answer(op, 'anonymous', {});
      found.push(...res.problems);
      if (res.code === 'AUTH_NOT_OPERATOR') operatorOnly.add(op);
    }
    expect(found).toEqual([]);
    expect(operatorOnly.size).toBeGreaterThan(0);
  });

  it('signed in without any permission', async () => {
    const found: string[] = [];
    for (const op of ops)
      if (op['x-access']?.startsWith('permission '))
        found.push(...(await call(op, 'member', { cookie: await member() })));
    expect(found).toEqual([]);
  });

  it('signed in without the permission, with a body the operation takes: its 403 is listed', async () => {
    const op = ops.find((o) => o.method === 'post' && o.path === '/api/v1/user/users/{id}/set-password')!;
    const res = await answer(op, 'member, valid body', {
      cookie: await member(),
      body: JSON.stringify({ password: 'a long enough password' }),
    });
    expect(res.code).toBe('AUTH_FORBIDDEN');
    expect(res.problems).toEqual([]);
  });

  it('reads by an unknown id, and by ids that are no id (not a UUID, holding a NUL)', async () => {
    const found: string[] = [];
    for (const op of ops) {
      if (changesState(op) || !op.path.includes('{')) continue;
      const host = hostFor(op);
      const cookie = await admin(host);
      const unknown = await answer(op, 'unknown id', { host, cookie });
      found.push(...unknown.problems);
      for (const id of ['not-a-uuid', 'a%00b']) {
        const res = await answer(op, `id ${id}`, { host, cookie, id });
        found.push(...res.problems);
        // One 404 for every id that is not there (docs/api-conventions.md): no id is an unknown one.
        if (unknown.status === 404 && (res.status !== 404 || res.code !== unknown.code))
          found.push(
            `${op.method.toUpperCase()} ${op.path} answered ${res.status} ${res.code} to id ${id}, not its 404`,
          );
      }
    }
    expect(found).toEqual([]);
  });

  it('with an unknown query parameter', async () => {
    const found: string[] = [];
    for (const op of ops) {
      const host = hostFor(op);
      found.push(...(await call(op, '?unknownParameter=1', { host, cookie: await admin(host), query: '?zz=1' })));
    }
    expect(found).toEqual([]);
  });

  it('with a body outside its schema, and with a body where it takes none', async () => {
    const found: string[] = [];
    for (const op of ops) {
      if (!changesState(op)) continue;
      const host = hostFor(op);
      const json = op.requestBody?.content['application/json'];
      if (op.requestBody && !json) continue;
      for (const body of ['{"unknownMember":1}', '[1]', '"text"']) {
        const res = await answer(op, `body ${body}`, { host, cookie: await admin(host), body });
        found.push(...res.problems);
        // A route that takes no body refuses one as it refuses an unknown member of a body it takes.
        if (!op.requestBody && res.code !== 'VALIDATION_FAILED')
          found.push(`${op.method.toUpperCase()} ${op.path} takes no body, answered ${res.status} to ${body}`);
      }
    }
    expect(found).toEqual([]);
  });

  it("at a tenant whose plan grants no feature and bounds every limit at 0, a gated operation's refusal is listed", async () => {
    const operator = await admin(OPERATOR);
    const limits = { 'user.seats': 0, 'token.active': 0, 'file.storage_bytes': 0, 'webhook.endpoints': 0 };
    const set = await t.app.web!.inject({
      method: 'PUT',
      url: `/api/v1/tenant/tenants/${t.bare.id}/entitlements`,
      headers: { host: OPERATOR, cookie: operator, 'content-type': 'application/json' },
      payload: JSON.stringify({ features: [], limits }),
    });
    expect(set.statusCode, set.body).toBe(200);
    const bare = { host: 'bare.localhost', cookie: (await signInAs(t.app, t.bare, ['*'])).cookie };
    const find = (method: string, path: string) => ops.find((op) => op.method === method && op.path === path)!;
    const gated: [Op, string][] = [
      [find('post', '/api/v1/user/users'), JSON.stringify({ email: 'seat@example.test' })],
      [find('post', '/api/v1/user/invitations'), JSON.stringify({ email: 'invited@example.test' })],
      [find('post', '/api/v1/auth/tokens'), JSON.stringify({ name: 'ci', permissions: [] })],
      [
        find('post', '/api/v1/webhook/endpoints'),
        JSON.stringify({ url: 'https://hooks.example.com/x', events: ['task.sla_breached'] }),
      ],
    ];
    const found: string[] = [];
    const codes: (string | undefined)[] = [];
    for (const [op, body] of gated) {
      const res = await answer(op, 'plan refuses', { ...bare, body });
      found.push(...res.problems);
      codes.push(res.code);
    }
    expect(found).toEqual([]);
    expect(codes).toEqual(['PLAN_LIMIT_REACHED', 'PLAN_LIMIT_REACHED', 'PLAN_LIMIT_REACHED', 'FEATURE_NOT_IN_PLAN']);
    // And every operation a feature gates says so in its 403.
    for (const op of ops.filter((o) => (o as { 'x-feature'?: string })['x-feature'] !== undefined))
      expect(op.responses['403']?.description, `${op.method} ${op.path}`).toContain('FEATURE_NOT_IN_PLAN');
    // The upload counts its bytes and asks a public file's feature in its handler: both are listed.
    expect(codesIn(find('post', '/api/v1/file/files').responses['403']!.description)).toEqual(
      expect.arrayContaining(['PLAN_LIMIT_REACHED', 'FEATURE_NOT_IN_PLAN']),
    );
  });
});

describe('an operation that lists no request body takes none (docs/api-conventions.md)', () => {
  const READ_ALL = '/api/v1/notification/notifications/read';
  const post = async (url: string, cookie: string, body?: string) =>
    t.app.web!.inject({
      method: 'POST',
      url,
      headers: { host: HOST, cookie, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { payload: body } : {}),
    });

  it('answers without a body, or with an empty object, as before', async () => {
    const cookie = await admin(HOST);
    expect((await post(READ_ALL, cookie)).statusCode).toBe(200);
    expect((await post(READ_ALL, cookie, '{}')).statusCode).toBe(200);
  });

  it('refuses each member at its pointer, and any other JSON value at /body', async () => {
    const cookie = await admin(HOST);
    const members = await post(READ_ALL, cookie, '{"x":1,"a/b":2}');
    expect(members.statusCode).toBe(422);
    expect(members.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      errors: [
        { pointer: '/body/x', message: 'unknown property: x (this operation takes no body)' },
        { pointer: '/body/a~1b', message: 'unknown property: a/b (this operation takes no body)' },
      ],
    });
    for (const body of ['null', '[]', '0', '"x"']) {
      const res = await post(READ_ALL, cookie, body);
      expect(res.statusCode, body).toBe(422);
      expect(res.json().errors, body).toEqual([{ pointer: '/body', message: 'this operation takes no body' }]);
    }
  });

  it('in a batch as alone: the request with a body is refused with its index, one without passes', async () => {
    const cookie = await admin(HOST);
    const batch = (requests: unknown[]) => post('/api/v1/batch', cookie, JSON.stringify({ requests }));
    const refused = await batch([
      { method: 'POST', path: READ_ALL },
      { method: 'POST', path: READ_ALL, body: { x: 1 } },
    ]);
    expect(refused.statusCode, refused.body).toBe(422);
    expect(refused.json()).toMatchObject({ code: 'VALIDATION_FAILED', index: 1 });
    const passed = await batch([
      { method: 'POST', path: READ_ALL },
      { method: 'POST', path: READ_ALL, body: {} },
    ]);
    expect(passed.statusCode, passed.body).toBe(200);
  });
});
