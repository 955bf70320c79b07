import { createSample } from '../helpers/samples/overrides.ts';
import { anonymousFormToken, sessionFormToken } from '../../framework/access/form-token.ts';
import { hashSecret } from '../../framework/access/session-cookie.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TSchema } from 'typebox';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import type { ResolvedEntity } from '../../framework/entity/resolve.ts';
import { generatedResources } from '../../framework/admin/resource-pages/resource-pages.ts';
import { moduleSidebarEntries } from '../../framework/admin/sidebar.ts';
import { checkedSample } from '../helpers/samples/values.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import { codeLikeText } from '../helpers/readable-text.ts';
import { allModules } from '../../modules/index.ts';

// Issue 35, point 1: no error code, regular expression, JSON pointer, event name or HTTP status in
// any text a person reads under /admin. Every generated page, every form with each kind of refused
// value, the refusals of business rules, the fixed pages and the pages the modules add to the
// sidebar are rendered and their readable text (test/helpers/readable-text.ts) scanned.

let app: TestApp;
let acme: TenantRef;
let admin: SignedIn;
let operator: SignedIn;
const HOST = 'acme.localhost';
const OPERATOR = 'operator.localhost';

beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'acme', HOST);
  admin = await signInAs(app, acme, ['*']);
  operator = await signInAs(app, app.operator, ['*']);
}, 60_000);
afterAll(async () => {
  await app?.close();
});

/** Every finding on every page, `path: finding`, so a failure names them all at once. */
const findings: string[] = [];
let pagesScanned = 0;

function scan(label: string, html: string): void {
  pagesScanned++;
  for (const finding of codeLikeText(html, app.services.registry.events)) findings.push(`${label}: ${finding}`);
}

const hostOf = (entity: ResolvedEntity) => (entity.scope === 'global' ? OPERATOR : HOST);
const callerOf = (entity: ResolvedEntity) => (entity.scope === 'global' ? operator : admin);

async function get(who: SignedIn | null, host: string, path: string) {
  const req = app.http(host).get(path);
  return who ? req.set('Cookie', who.cookie) : req;
}
async function post(who: SignedIn, host: string, path: string, fields: Record<string, string>) {
  return app
    .http(host)
    .post(path)
    .type('form')
    .set('Cookie', who.cookie)
    .send({ csrf: sessionFormToken(who.rawSessionId), ...fields });
}

/**
 * The caller's row-access values the create body takes (a memo's ownerId): a reference the
 * database enforces must name a real row, and the caller's own record has pages for them.
 */
async function ownAccess(entity: ResolvedEntity, tenant: TenantRef): Promise<Record<string, unknown>> {
  const rowAccess = entity.def.rowAccess;
  if (!rowAccess) return {};
  const access = await app.services.transactions.run(tenant, async (ctx) => ({ ...rowAccess(ctx) }), {
    sessionHash: hashSecret(callerOf(entity).rawSessionId),
  });
  const settable = (entity.schemas.create as { properties: Record<string, unknown> }).properties;
  return Object.fromEntries(Object.entries(access).filter(([field]) => field in settable));
}

/** A row made through the API, with a body derived from the schema (as the conformance suite does). */
let n = 0;
async function makeRow(entity: ResolvedEntity): Promise<string> {
  const tenant = entity.scope === 'global' ? app.operator : acme;
  const body = {
    ...(checkedSample(entity.schemas.create, ++n, 'create') as object),
    ...(await createSample(app.services, tenant, entity.names.key, n)),
    ...(await ownAccess(entity, tenant)),
  };
  const res = await app.http(hostOf(entity)).post(entity.names.path).set('Cookie', callerOf(entity).cookie).send(body);
  expect(res.status, `${entity.names.key}: ${JSON.stringify(res.body)}`).toBe(201);
  return res.body.id as string;
}

/** The record's History page and a Restore confirmation, where the entity keeps history. */
async function historyPaths(entity: ResolvedEntity, id: string): Promise<string[]> {
  if (entity.def.history === false) return [];
  const res = await get(callerOf(entity), hostOf(entity), `${entity.names.path}/${id}/history`);
  // A record row access hides from the caller (another person's memo) has no page for them either.
  if (res.status === 404) return [];
  expect(res.status, entity.names.key).toBe(200);
  const revision = (res.body.items as { id: string }[])[0]!.id;
  return [`${entity.names.adminPath}/${id}/history`, `${entity.names.adminPath}/${id}/restore?revision=${revision}`];
}

interface Node {
  type?: string | string[];
  format?: string;
  pattern?: string;
  enum?: unknown[];
  anyOf?: Node[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  items?: Node;
}
const core = (node: Node): Node =>
  node.anyOf?.filter((b) => b.type !== 'null').length === 1 ? node.anyOf.find((b) => b.type !== 'null')! : node;
const typeOf = (node: Node) => (Array.isArray(node.type) ? node.type.find((t) => t !== 'null') : node.type);
const isChoice = (node: Node) =>
  node.enum !== undefined || (node.anyOf?.length ? node.anyOf.every((b) => 'const' in b) : false);

/** The kinds of refused value a form can meet, and the text that breaks each in one field (undefined: the field has no such rule). */
const KINDS: Record<string, (node: Node) => string | undefined> = {
  required: () => '',
  length: (node) =>
    typeOf(node) === 'string' && node.maxLength !== undefined && node.maxLength <= 20_000
      ? 'x'.repeat(node.maxLength + 1)
      : typeOf(node) === 'string' && (node.minLength ?? 0) > 1
        ? 'x'
        : undefined,
  pattern: (node) => (typeOf(node) === 'string' && node.pattern ? 'Not Like This!\nTwo lines' : undefined),
  format: (node) => (typeOf(node) === 'string' && node.format ? 'not-a-valid-value' : undefined),
  choice: (node) => (isChoice(node) ? 'not-an-option' : undefined),
  number: (node) => (typeOf(node) === 'integer' || typeOf(node) === 'number' ? 'twelve' : undefined),
  range: (node) =>
    typeOf(node) === 'integer' && node.maximum !== undefined
      ? String(node.maximum + 1)
      : typeOf(node) === 'integer' && node.minimum !== undefined
        ? String(node.minimum - 1)
        : undefined,
  items: (node) =>
    typeOf(node) === 'array' && node.items?.maxLength !== undefined ? 'x'.repeat(node.items.maxLength + 1) : undefined,
  json: (node) => (typeOf(node) === 'object' ? '{not json' : undefined),
};

/** One form post per kind of refused value its fields can take, each field broken the same way. */
async function postEachKind(
  who: SignedIn,
  host: string,
  path: string,
  body: TSchema | undefined,
  seen: Set<string>,
): Promise<void> {
  const properties = (body as { properties?: Record<string, Node> } | undefined)?.properties ?? {};
  for (const [kind, breaker] of Object.entries(KINDS)) {
    const fields: Record<string, string> = {};
    for (const [name, schema] of Object.entries(properties)) {
      const value = breaker(core(schema));
      if (value !== undefined) fields[name] = value;
    }
    if (Object.keys(fields).length === 0) continue;
    const res = await post(who, host, path, fields);
    if (res.status === 303) continue;
    expect(res.status, `${path} ${kind}`).toBeLessThan(500);
    if (res.text.includes('class="error-text"')) seen.add(kind);
    scan(`POST ${path} (${kind})`, res.text);
  }
}

describe('plain language in the admin shell', () => {
  it('gives every field of every entity, and every command body field, a label and a hint', () => {
    const missing: string[] = [];
    // The product's modules (the test app also installs a test-only module).
    const product = new Set(allModules.map((m) => m.name));
    for (const entity of app.services.registry.entities.filter((e) => product.has(e.module))) {
      for (const field of [...entity.fields, ...entity.computed]) {
        const text = entity.def.admin?.fieldText?.[field];
        if (!text?.label || !text.hint) missing.push(`${entity.names.key}.${field}`);
      }
      for (const [name, command] of Object.entries(entity.def.commands ?? {})) {
        if (!command.admin?.label) missing.push(`${entity.names.key} command ${name}: label`);
        const properties = (command.body as { properties?: Record<string, unknown> } | undefined)?.properties ?? {};
        for (const field of Object.keys(properties)) {
          const text = command.admin?.fields?.[field] ?? entity.def.admin?.fieldText?.[field];
          if (!text?.label || !text.hint) missing.push(`${entity.names.key} command ${name}: ${field}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('finds a planted code, validator text, pattern, status and event name (the scan can fail)', () => {
    const events = app.services.registry.events;
    expect(codeLikeText('<p>Any other move is 409 INVALID_TRANSITION</p>', events)).toHaveLength(2);
    expect(codeLikeText('<span class="hint">must match pattern "^[a-z]+$"</span>', events)).toHaveLength(2);
    expect(codeLikeText('<a title="Publishes task.assigned" href="/x">x</a>', events)).toHaveLength(1);
    expect(codeLikeText('<td data-label="SLA_BREACHED">Yes</td>', events)).toHaveLength(1);
    // Not read by a person: ids, names, URLs, data-code, scripts.
    expect(
      codeLikeText(
        '<div id="X_Y_Z_W" data-code="INVALID_TRANSITION"><a href="/api/v1/task.assigned/ABCDEFG">Open</a><script>var A_B_C_D = 1</script></div>',
        events,
      ),
    ).toEqual([]);
  });

  it('shows none on any generated page, on any form with each kind of refused value, or on the refusals of business rules', async () => {
    const kindsSeen = new Set<string>();
    for (const entity of generatedResources(app.services.registry)) {
      const host = hostOf(entity);
      const who = callerOf(entity);
      const base = entity.names.adminPath;
      const id = await makeRow(entity);
      const paths = [
        base,
        `${base}/rows`,
        `${base}/new`,
        `${base}/${id}`,
        `${base}/${id}/edit`,
        `${base}/${id}/delete`,
        ...Object.keys(entity.def.commands ?? {}).map((c) => `${base}/${id}/${c}`),
        ...(await historyPaths(entity, id)),
      ];
      for (const path of paths) {
        const res = await get(who, host, path);
        expect(res.status, path).toBeLessThan(500);
        scan(`GET ${path}`, res.text);
      }
      await postEachKind(who, host, `${base}/new`, entity.schemas.create, kindsSeen);
      await postEachKind(who, host, `${base}/${id}/edit`, entity.schemas.patch, kindsSeen);
      for (const [command, definition] of Object.entries(entity.def.commands ?? {})) {
        await postEachKind(who, host, `${base}/${id}/${command}`, definition.body, kindsSeen);
      }
    }
    // Each kind of refused value was met by some form.
    expect([...kindsSeen].sort()).toEqual(
      expect.arrayContaining(['choice', 'format', 'length', 'number', 'pattern', 'range', 'required']),
    );

    // Refusals of business rules (409s): a status move the task's graph refuses, a resolved task
    // resolved again, a slug taken, the last administrator deactivated.
    const task = await app
      .http(HOST)
      .post('/api/v1/task/tasks')
      .set('Cookie', admin.cookie)
      .send({ title: 'Graph', priority: 'low', deadline: '2099-01-01T00:00:00Z' });
    const moved = await post(admin, HOST, `/admin/task/tasks/${task.body.id}/edit`, {
      title: 'Graph',
      priority: 'low',
      deadline: '2099-01-01T00:00',
      status: 'in_progress',
    });
    expect(moved.status).toBe(409);
    scan('POST task edit (status move refused)', moved.text);
    await app
      .http(HOST)
      .post(`/api/v1/task/tasks/${task.body.id}/resolve`)
      .set('Cookie', admin.cookie)
      .send({ resolution: 'Done' })
      .expect(200);
    const again = await post(admin, HOST, `/admin/task/tasks/${task.body.id}/resolve`, { resolution: 'Again' });
    expect(again.status).toBe(409);
    scan('POST task resolve (resolved already)', again.text);
    await app
      .http(HOST)
      .post('/api/v1/content/contents')
      .set('Cookie', admin.cookie)
      .send({ slug: 'taken', title: 'Taken', kind: 'page', body: 'x' })
      .expect(201);
    const taken = await post(admin, HOST, '/admin/content/contents/new', {
      slug: 'taken',
      title: 'Second',
      kind: 'page',
      body: 'y',
    });
    expect(taken.status).toBe(409);
    expect(taken.text).toContain('Another item already uses this address.');
    scan('POST content new (slug taken)', taken.text);
    // In a tenant whose one administrator is someone else than the user manager acting.
    const solo = await createCustomer(app, 'solo', 'solo.localhost');
    const manager = await signInAs(app, solo, ['user:read', 'user:manage']);
    const onlyAdmin = await addUser(app, solo, { roles: ['admin'] });
    const last = await post(manager, 'solo.localhost', `/admin/user/users/${onlyAdmin.id}/deactivate`, {});
    expect(last.status).toBe(409);
    scan('POST user deactivate (last administrator)', last.text);

    expect(pagesScanned).toBeGreaterThan(100);
    expect(findings).toEqual([]);
  }, 240_000);

  it('shows none on the fixed pages, the error pages and the pages the modules add, nor on an empty list', async () => {
    findings.length = 0;
    const member = await signInAs(app, acme, []);
    const empty = await createCustomer(app, 'empty', 'empty.localhost');
    const emptyAdmin = await signInAs(app, empty, ['*']);
    const sidebar = moduleSidebarEntries(app.services.registry.modules).map((entry) => entry.path);
    const pages: [SignedIn | null, string, string][] = [
      [null, HOST, '/admin/login'],
      [admin, HOST, '/admin'],
      [admin, HOST, '/admin/health'],
      [admin, HOST, '/admin/health/database'],
      [admin, HOST, '/admin/_gallery'],
      [admin, HOST, '/admin/audit/activity'],
      [emptyAdmin, 'empty.localhost', '/admin/audit/activity'],
      [admin, HOST, '/admin/auth/roles'],
      [admin, HOST, '/admin/auth/roles/admin'],
      [admin, HOST, '/admin/no/such/page'],
      [admin, HOST, '/admin/tenant/tenants'],
      [member, HOST, '/admin/task/tasks'],
      ...sidebar.map((path): [SignedIn, string, string] => [admin, HOST, path]),
      ...sidebar.map((path): [SignedIn, string, string] => [operator, OPERATOR, path]),
      ...sidebar.map((path): [SignedIn, string, string] => [emptyAdmin, 'empty.localhost', path]),
    ];
    for (const [who, host, path] of pages) {
      const res = await get(who, host, path);
      expect(res.status, `${host}${path}`).toBeLessThan(500);
      scan(`GET ${host}${path}`, res.text);
    }
    // A refused sign-in, and a role form refused for an unknown permission.
    const secret = 'S'.repeat(43);
    const refused = await app
      .http(HOST)
      .post('/admin/login')
      .set('Cookie', `app_csrf=${secret}`)
      .type('form')
      .send({ csrf: anonymousFormToken(secret, acme.id), email: 'x@example.test', password: 'wrong' });
    expect(refused.status).toBe(401);
    scan('POST login (refused)', refused.text);
    const role = await post(admin, HOST, '/admin/auth/roles/admin', { permissions: 'no:such' });
    scan('POST role (unknown permission)', role.text);
    expect(findings).toEqual([]);
  }, 120_000);
});
