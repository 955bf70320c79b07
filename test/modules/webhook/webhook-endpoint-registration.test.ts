import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { signInAs, type SignedIn } from '../../helpers/app.ts';
import { useTestApp } from '../../helpers/use-test-app.ts';
import { dereferenced } from '../../helpers/openapi.ts';
import { validateConfig } from '../../../framework/config/load.ts';

// The shipped defaults: https only, no private networks. No worker runs here, so no endpoint
// created below is ever delivered to (its host is never resolved nor reached).
const t = useTestApp({ customers: ['regcheck', 'limits'] });
const host = 'regcheck.localhost';
const ENDPOINTS = '/api/v1/webhook/endpoints';

let admin: SignedIn | undefined;
const signedIn = async () => (admin ??= await signInAs(t.app, t.regcheck, ['webhook:manage']));

const create = async (body: Record<string, unknown>) =>
  t.app
    .http(host)
    .post(ENDPOINTS)
    .set('Cookie', (await signedIn()).cookie)
    .send({ events: ['task.sla_breached'], ...body });

const expectRefused = (res: { status: number; body: Record<string, unknown> }, setting: RegExp, label: string) => {
  expect(res.status, `${label}: ${JSON.stringify(res.body)}`).toBe(422);
  expect(res.body.code, label).toBe('VALIDATION_FAILED');
  expect(res.body.errors, label).toEqual([{ pointer: '/body/url', message: expect.stringMatching(setting) }]);
  expect(res.body.detail, label).toMatch(setting);
};

describe('an endpoint URL every delivery would refuse is refused when it is registered, naming the setting', () => {
  const refusals: [string, RegExp][] = [
    ['http://hooks.example.com/x', /webhooks\.allow_http is off/],
    ['https://127.0.0.1/x', /127\.0\.0\.1 is a loopback address.*webhooks\.allow_private_networks is off/],
    ['https://[::1]:8443/x', /::1 is a loopback address.*webhooks\.allow_private_networks/],
    ['https://10.1.2.3/x', /private address.*webhooks\.allow_private_networks/],
    ['https://169.254.169.254/latest/meta-data/', /metadata address.*webhooks\.allow_private_networks/],
    [
      'https://[::ffff:0:127.0.0.1]:4399/',
      /loopback address \(127\.0\.0\.1, in an IPv6 form\).*allow_private_networks/,
    ],
    ['https://0x7f.1/x', /127\.0\.0\.1 is a loopback address/],
    ['http:///x', /no host.*http:\/\/\/x/],
    ['https:///hooks.example.com/x', /no host/],
  ];

  it('create: 422 VALIDATION_FAILED with /body/url, and nothing is stored', async () => {
    for (const [url, setting] of refusals) expectRefused(await create({ url }), setting, url);
    const list = await t.app
      .http(host)
      .get(ENDPOINTS)
      .set('Cookie', (await signedIn()).cookie);
    expect(list.body.items).toEqual([]);
  });

  it('PATCH: the same refusals, and the stored URL is kept', async () => {
    const created = await create({ url: 'https://hooks.example.com/tenantry' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    for (const [url, setting] of refusals) {
      const res = await t.app
        .http(host)
        .patch(`${ENDPOINTS}/${created.body.id}`)
        .set('Cookie', (await signedIn()).cookie)
        .send({ url });
      expectRefused(res, setting, url);
    }
    const read = await t.app
      .http(host)
      .get(`${ENDPOINTS}/${created.body.id}`)
      .set('Cookie', (await signedIn()).cookie);
    expect(read.body.url).toBe('https://hooks.example.com/tenantry');
    // A change of another field alone is not a change of the URL: it is not checked again.
    const other = await t.app
      .http(host)
      .patch(`${ENDPOINTS}/${created.body.id}`)
      .set('Cookie', (await signedIn()).cookie)
      .send({ description: 'kept' });
    expect(other.status).toBe(200);
  });
});

describe('the event names an endpoint may take are discoverable', () => {
  it('OpenAPI lists them as the enum of the events items: "*", then every declared event', async () => {
    const doc = await dereferenced((await t.app.http().get('/api/v1/openapi.json').expect(200)).body);
    const schemas = doc.components.schemas as Record<
      string,
      { properties: Record<string, { items: { enum: string[] } }> }
    >;
    for (const name of ['EndpointCreate', 'EndpointUpdate', 'Endpoint']) {
      const values = schemas[name]!.properties.events!.items.enum;
      expect(values[0], name).toBe('*');
      expect(values, name).toEqual(expect.arrayContaining(['task.task.created', 'task.assigned', 'auth.logged_in']));
      const declared = [...t.app.services.registry.events];
      expect([...values.slice(1)].sort(), name).toEqual(declared.sort());
    }
    // The schema is what validation reads: a name outside it is refused.
    const res = await create({ url: 'https://hooks.example.com/x', events: ['task.task.nonsense'] });
    expect(res.status).toBe(422);
    expect(res.body.errors[0].pointer).toBe('/body/events/0');
  });

  it('GET /api/v1/webhook/events lists the same names with their module and resource', async () => {
    const res = await t.app
      .http(host)
      .get('/api/v1/webhook/events')
      .set('Cookie', (await signedIn()).cookie);
    expect(res.status).toBe(200);
    const items = res.body.events as { name: string; module: string; resource: string | null }[];
    expect(items).toContainEqual({ name: 'task.task.created', module: 'task', resource: 'task.task' });
    expect(items).toContainEqual({ name: 'task.assigned', module: 'task', resource: 'task.task' });
    expect(items).toContainEqual({ name: 'auth.logged_in', module: 'auth', resource: null });
    const doc = await dereferenced((await t.app.http().get('/api/v1/openapi.json').expect(200)).body);
    const values = (
      doc.components.schemas as Record<string, { properties: Record<string, { items: { enum: string[] } }> }>
    ).EndpointCreate!.properties.events!.items.enum;
    expect(items.map((e) => e.name)).toEqual([...values.slice(1)].sort());
    const outsider = await signInAs(t.app, t.regcheck, ['task:read']);
    expect((await t.app.http(host).get('/api/v1/webhook/events').set('Cookie', outsider.cookie)).status).toBe(403);
  });

  it('GET /api/v1/admin/resources lists each resource’s own events', async () => {
    const reader = await signInAs(t.app, t.regcheck, ['task:read', 'webhook:manage']);
    const res = await t.app.http(host).get('/api/v1/admin/resources').set('Cookie', reader.cookie);
    expect(res.status).toBe(200);
    const byKey = new Map((res.body.resources as { key: string; events: string[] }[]).map((r) => [r.key, r.events]));
    expect(byKey.get('task.task')).toEqual(
      expect.arrayContaining(['task.task.created', 'task.task.updated', 'task.task.deleted', 'task.assigned']),
    );
    expect(byKey.get('webhook.endpoint')).toEqual(
      expect.arrayContaining(['webhook.endpoint.created', 'webhook.endpoint.secret_rotated']),
    );
  });
});

describe('endpoints per tenant are bounded by webhooks.max_endpoints_per_tenant (default 20)', () => {
  it('a create past the bound is 409 LIMIT_REACHED with the limit; concurrent creates at the last place make one; a delete frees a place; a restore of a deleted one counts as a create', async () => {
    const who = await signInAs(t.app, t.limits, ['webhook:manage']);
    const make = (n: number) =>
      t.app
        .http('limits.localhost')
        .post(ENDPOINTS)
        .set('Cookie', who.cookie)
        .send({ url: `https://hooks.example.com/limit/${n}`, events: ['task.sla_breached'] });
    const ids: string[] = [];
    for (let n = 0; n < 19; n++) {
      const res = await make(n);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      ids.push(res.body.id);
    }
    // Five at once for the twentieth place: one is made, four are refused.
    const racing = await Promise.all([19, 20, 21, 22, 23].map(make));
    expect(racing.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
    const refused = racing.find((r) => r.status === 409)!;
    expect(refused.body).toMatchObject({
      code: 'LIMIT_REACHED',
      status: 409,
      limit: 20,
      setting: 'webhooks.max_endpoints_per_tenant',
    });
    expect(refused.body.detail).toMatch(/20 webhook endpoints.*webhooks\.max_endpoints_per_tenant/);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect((await make(99)).status).toBe(409);
    const list = await t.app.http('limits.localhost').get(`${ENDPOINTS}?limit=100`).set('Cookie', who.cookie);
    expect(list.body.items).toHaveLength(20);
    // Another tenant is not affected by this one's endpoints.
    expect((await create({ url: 'https://hooks.example.com/elsewhere' })).status).toBe(201);
    await t.app.http('limits.localhost').delete(`${ENDPOINTS}/${ids[0]}`).set('Cookie', who.cookie).expect(204);
    expect((await make(100)).status).toBe(201);

    // Bringing the deleted endpoint back from its history is a twenty-first: refused the same way,
    // until a place is free again.
    const deleted = `${ENDPOINTS}/${ids[0]}`;
    const history = await t.app.http('limits.localhost').get(`${deleted}/history`).set('Cookie', who.cookie);
    expect(history.status, JSON.stringify(history.body)).toBe(200);
    const revision = history.body.items.at(-1).id;
    const restore = () =>
      t.app.http('limits.localhost').post(`${deleted}/restore`).set('Cookie', who.cookie).send({ revision });
    const past = await restore();
    expect(past.status, JSON.stringify(past.body)).toBe(409);
    expect(past.body).toMatchObject({ code: 'LIMIT_REACHED', limit: 20, setting: 'webhooks.max_endpoints_per_tenant' });
    await t.app.http('limits.localhost').delete(`${ENDPOINTS}/${ids[1]}`).set('Cookie', who.cookie).expect(204);
    expect((await restore()).status).toBe(200);
  });
});

describe('config.yaml', () => {
  it('lists the webhooks section with every key at its default', () => {
    const shipped = parse(readFileSync(join(import.meta.dirname, '../../../config.yaml'), 'utf8')) as {
      webhooks?: unknown;
    };
    expect(shipped.webhooks).toEqual(validateConfig({}, 'defaults').webhooks);
  });
});
