import { describe, expect, it } from 'vitest';
import { signInAs, type SignedIn } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { form } from '../modules/file/helpers.ts';

/**
 * Issue 47: plans that mean something. Features and limits are declared by the modules, resolved
 * from the plan the tenant's subscription serves in the request's own opening statement, and
 * enforced by the framework: 403 FEATURE_NOT_IN_PLAN for a gated route, 403 PLAN_LIMIT_REACHED for
 * a write past a limit, under the limit's lock.
 */
const t = useTestApp({
  customers: ['free', 'seats', 'race', 'open', 'lifted', 'cancelled', 'downgrade', 'hooks', 'tokens', 'files'],
});

const ENDPOINTS = '/api/v1/webhook/endpoints';
const INVITATIONS = '/api/v1/user/invitations';
const ENTITLEMENTS = '/api/v1/billing/entitlements';
const CUSTOMER = ['billing:read', 'billing:manage', 'user:manage', 'user:read', 'webhook:manage'];

let planNo = 0;
let operatorCookie: string | undefined;
async function operator(): Promise<string> {
  operatorCookie ??= (await signInAs(t.app, t.app.operator, ['billing:catalog', 'billing:read', 'tenant:manage']))
    .cookie;
  return operatorCookie;
}

/** A free plan (active at subscribe, no trial) with these features and limits. */
async function createPlan(features: string[], limits?: Record<string, number>): Promise<string> {
  const res = await t.app
    .http()
    .post('/api/v1/billing/plans')
    .set('Cookie', await operator())
    .send({
      code: `entitled-${++planNo}`,
      name: `Plan ${planNo}`,
      price: 0,
      currency: 'EUR',
      interval: 'month',
      features,
      ...(limits ? { limits } : {}),
      active: true,
    });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

const host = (tenant: TenantRef) => `${tenant.slug}.localhost`;

/** Signs in an administrator of the tenant (one active user: one seat) and subscribes it to the plan. */
async function onPlan(tenant: TenantRef, planId: string | undefined): Promise<SignedIn> {
  const who = await signInAs(t.app, tenant, CUSTOMER);
  if (planId) {
    const res = await t.app
      .http(host(tenant))
      .post('/api/v1/billing/subscription/subscribe')
      .set('Cookie', who.cookie)
      .send({ planId });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.status).toBe('active');
  }
  return who;
}

let n = 0;
const invite = (tenant: TenantRef, who: SignedIn) =>
  t.app
    .http(host(tenant))
    .post(INVITATIONS)
    .set('Cookie', who.cookie)
    .send({ email: `person-${++n}@example.test` });

const createEndpoint = (tenant: TenantRef, who: SignedIn) =>
  t.app
    .http(host(tenant))
    .post(ENDPOINTS)
    .set('Cookie', who.cookie)
    .send({ url: `https://hooks.example.com/plan/${++n}`, events: ['task.sla_breached'] });

const entitlements = (tenant: TenantRef, who: SignedIn) =>
  t.app.http(host(tenant)).get(ENTITLEMENTS).set('Cookie', who.cookie);

async function count(tenant: TenantRef, table: 'users' | 'webhook_endpoints'): Promise<number> {
  const { rows } = await t.app.services.db.pool.query<{ n: string }>(
    `select count(*) as n from ${table} where tenant_id = $1 and deleted_at is null`,
    [tenant.id],
  );
  return Number(rows[0]!.n);
}

const seatsOf = (body: { limits: { name: string; value: number | null; use: number }[] }) =>
  body.limits.find((l) => l.name === 'user.seats');

describe('a feature the plan lacks', () => {
  it('refuses endpoint creation with 403 FEATURE_NOT_IN_PLAN naming the feature, and writes nothing', async () => {
    const who = await onPlan(t.free, await createPlan(['file.public_links']));
    const res = await createEndpoint(t.free, who);
    expect(res.status, JSON.stringify(res.body)).toBe(403);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(res.body.code).toBe('FEATURE_NOT_IN_PLAN');
    expect(res.body.feature).toBe('webhook.endpoints');
    expect(await count(t.free, 'webhook_endpoints')).toBe(0);
    // The whole entity is gated: its list too, taken out of the one-exchange path.
    const list = await t.app.http(host(t.free)).get(ENDPOINTS).set('Cookie', who.cookie);
    expect(list.status).toBe(403);
    expect(list.body.code).toBe('FEATURE_NOT_IN_PLAN');
    // Its stream reads the same rows: refused before it starts, as a problem document.
    const stream = await t.app.http(host(t.free)).get(`${ENDPOINTS}/stream`).set('Cookie', who.cookie);
    expect(stream.status).toBe(403);
    expect(stream.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(stream.body.code).toBe('FEATURE_NOT_IN_PLAN');
    expect(stream.body.feature).toBe('webhook.endpoints');
    // In a batch, the same refusal.
    const batch = await t.app
      .http(host(t.free))
      .post('/api/v1/batch')
      .set('Cookie', who.cookie)
      .send({
        requests: [{ method: 'POST', path: ENDPOINTS, body: { url: 'https://hooks.example.com/b', events: ['*'] } }],
      });
    expect(JSON.stringify(batch.body)).toContain('FEATURE_NOT_IN_PLAN');
    expect(await count(t.free, 'webhook_endpoints')).toBe(0);
  });

  it('is reported by GET /api/v1/billing/entitlements', async () => {
    const who = await signInAs(t.app, t.free, ['billing:read']);
    const res = await entitlements(t.free, who);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.features).toEqual(['file.public_links']);
    expect(res.body.limits.map((l: { name: string }) => l.name).sort()).toEqual([
      'file.storage_bytes',
      'token.active',
      'user.seats',
      'webhook.endpoints',
    ]);
  });
});

describe('a tenant with no subscription', () => {
  it('can do everything, as without plans: every feature and no limit', async () => {
    const who = await onPlan(t.open, undefined);
    expect((await createEndpoint(t.open, who)).status).toBe(201);
    for (let i = 0; i < 4; i++) expect((await invite(t.open, who)).status).toBe(201);
    const res = await entitlements(t.open, who);
    expect(res.body.features).toEqual(expect.arrayContaining(['webhook.endpoints', 'file.public_links']));
    expect(seatsOf(res.body)).toMatchObject({ value: null, use: 5, unit: 'seats' });
  });
});

describe('a plan with user.seats: 2', () => {
  it('admits invitations up to the second seat, refuses the next with 403 PLAN_LIMIT_REACHED, and reports 2 of 2', async () => {
    const who = await onPlan(t.seats, await createPlan(['webhook.endpoints'], { 'user.seats': 2 }));
    expect((await invite(t.seats, who)).status).toBe(201);
    const refused = await invite(t.seats, who);
    expect(refused.status, JSON.stringify(refused.body)).toBe(403);
    expect(refused.body).toMatchObject({ code: 'PLAN_LIMIT_REACHED', limit: 'user.seats', value: 2, use: 2 });
    expect(await count(t.seats, 'users')).toBe(2);
    const res = await entitlements(t.seats, who);
    expect(seatsOf(res.body)).toMatchObject({ value: 2, use: 2 });
  });

  it('an operator override lifts the limit at once; an unknown name in it is 422', async () => {
    const who = await onPlan(t.lifted, await createPlan([], { 'user.seats': 1 }));
    expect((await invite(t.lifted, who)).body.code).toBe('PLAN_LIMIT_REACHED');
    const put = (body: unknown) =>
      t.app
        .http()
        .put(`/api/v1/tenant/tenants/${t.lifted.id}/entitlements`)
        .set('Cookie', operatorCookie!)
        .send(body as object);
    const unknown = await put({ limits: { 'user.chairs': 3 } });
    expect(unknown.status).toBe(422);
    expect(unknown.body.code).toBe('VALIDATION_FAILED');
    const lifted = await put({ limits: { 'user.seats': null } });
    expect(lifted.status, JSON.stringify(lifted.body)).toBe(200);
    expect(lifted.body).toEqual({ limits: { 'user.seats': null } });
    expect((await invite(t.lifted, who)).status).toBe(201);
    // And the plan's features, replaced for this tenant alone.
    expect((await createEndpoint(t.lifted, who)).body.code).toBe('FEATURE_NOT_IN_PLAN');
    // A PUT is the whole override: the lifted limit is named again.
    expect((await put({ features: ['webhook.endpoints'], limits: { 'user.seats': null } })).status).toBe(200);
    expect((await createEndpoint(t.lifted, who)).status).toBe(201);
    // The operator's tenant page shows the override in words.
    const shown = await t.app.http().get(`/admin/tenant/tenants/${t.lifted.id}`).set('Cookie', operatorCookie!);
    expect(shown.status).toBe(200);
    expect(shown.text).toContain('Plan override');
    expect(shown.text).toContain('Webhook endpoints: the tenant’s events pushed to its own URLs');
    expect(shown.text).toMatch(/People who hold a seat[^<]*<\/dt><dd>No limit/);
    // A customer may not override itself.
    const self = await t.app
      .http(host(t.lifted))
      .put(`/api/v1/tenant/tenants/${t.lifted.id}/entitlements`)
      .set('Cookie', who.cookie)
      .send({});
    expect(self.status).toBe(403);
  });
});

describe('concurrency', () => {
  it('10 simultaneous invitations at one free seat give exactly one success', async () => {
    const who = await onPlan(t.race, await createPlan([], { 'user.seats': 3 }));
    expect((await invite(t.race, who)).status).toBe(201);
    const answers = await Promise.all(Array.from({ length: 10 }, () => invite(t.race, who)));
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([201, ...Array(9).fill(403)]);
    for (const r of answers.filter((a) => a.status === 403)) expect(r.body.code).toBe('PLAN_LIMIT_REACHED');
    expect(await count(t.race, 'users')).toBe(3);
  });

  it('10 simultaneous endpoint creates at one free place give exactly one (webhook.endpoints)', async () => {
    const who = await onPlan(t.hooks, await createPlan(['webhook.endpoints'], { 'webhook.endpoints': 2 }));
    expect((await createEndpoint(t.hooks, who)).status).toBe(201);
    const answers = await Promise.all(Array.from({ length: 10 }, () => createEndpoint(t.hooks, who)));
    expect(answers.map((r) => r.status).sort()).toEqual([201, ...Array(9).fill(403)]);
    expect(answers.find((r) => r.status === 403)!.body).toMatchObject({
      code: 'PLAN_LIMIT_REACHED',
      limit: 'webhook.endpoints',
      value: 2,
      use: 2,
    });
    expect(await count(t.hooks, 'webhook_endpoints')).toBe(2);
  });

  it('10 simultaneous tokens at one free place give exactly one (token.active)', async () => {
    const who = await onPlan(t.tokens, await createPlan([], { 'token.active': 1 }));
    const make = () =>
      t.app
        .http(host(t.tokens))
        .post('/api/v1/auth/tokens')
        .set('Cookie', who.cookie)
        .send({ name: `t${++n}`, permissions: ['user:read'] });
    const answers = await Promise.all(Array.from({ length: 10 }, make));
    expect(answers.map((r) => r.status).sort()).toEqual([201, ...Array(9).fill(403)]);
    expect(answers.find((r) => r.status === 403)!.body).toMatchObject({
      code: 'PLAN_LIMIT_REACHED',
      limit: 'token.active',
    });
  });
});

describe('files under a plan', () => {
  const upload = (who: SignedIn, bytes: number, visibility = 'private') => {
    const { body, type } = form([
      { name: 'file', filename: 'a.bin', type: 'application/octet-stream', content: Buffer.alloc(bytes, 7) },
    ]);
    return t.app
      .http(host(t.files))
      .post(`/api/v1/file/files?visibility=${visibility}`)
      .set('Cookie', who.cookie)
      .set('Content-Type', type)
      .send(body);
  };

  it('a public file needs file.public_links; 10 simultaneous uploads at the last room of file.storage_bytes store one', async () => {
    const who = await signInAs(t.app, t.files, ['file:manage', 'file:read', 'billing:manage', 'billing:read']);
    const planId = await createPlan([], { 'file.storage_bytes': 100 });
    const subscribed = await t.app
      .http(host(t.files))
      .post('/api/v1/billing/subscription/subscribe')
      .set('Cookie', who.cookie)
      .send({ planId });
    expect(subscribed.status).toBe(200);
    const open = await upload(who, 10, 'public');
    expect(open.status, JSON.stringify(open.body)).toBe(403);
    expect(open.body).toMatchObject({ code: 'FEATURE_NOT_IN_PLAN', feature: 'file.public_links' });
    expect((await upload(who, 60)).status).toBe(201);
    const answers = await Promise.all(Array.from({ length: 10 }, () => upload(who, 30)));
    expect(answers.map((r) => r.status).sort()).toEqual([201, ...Array(9).fill(403)]);
    expect(answers.find((r) => r.status === 403)!.body).toMatchObject({
      code: 'PLAN_LIMIT_REACHED',
      limit: 'file.storage_bytes',
      value: 100,
      use: 90,
    });
    const { rows } = await t.app.services.db.pool.query<{ n: string }>(
      `select coalesce(sum(size), 0) as n from files where tenant_id = $1`,
      [t.files.id],
    );
    expect(Number(rows[0]!.n)).toBe(90);
  });
});

describe('who gets what', () => {
  it('a cancelled subscription falls back to the defaults', async () => {
    const who = await onPlan(t.cancelled, await createPlan([], { 'user.seats': 1 }));
    expect((await createEndpoint(t.cancelled, who)).body.code).toBe('FEATURE_NOT_IN_PLAN');
    const cancel = await t.app
      .http(host(t.cancelled))
      .post('/api/v1/billing/subscription/cancel')
      .set('Cookie', who.cookie)
      .send({ atPeriodEnd: false });
    expect(cancel.status, JSON.stringify(cancel.body)).toBe(200);
    expect((await createEndpoint(t.cancelled, who)).status).toBe(201);
    expect((await invite(t.cancelled, who)).status).toBe(201);
  });

  it('a downgrade below current use refuses new use and keeps what exists', async () => {
    const who = await onPlan(t.downgrade, await createPlan([], { 'user.seats': 5 }));
    for (let i = 0; i < 3; i++) expect((await invite(t.downgrade, who)).status).toBe(201);
    const put = await t.app
      .http()
      .put(`/api/v1/tenant/tenants/${t.downgrade.id}/entitlements`)
      .set('Cookie', await operator())
      .send({ limits: { 'user.seats': 2 } });
    expect(put.status).toBe(200);
    const refused = await invite(t.downgrade, who);
    expect(refused.body).toMatchObject({ code: 'PLAN_LIMIT_REACHED', value: 2, use: 4 });
    expect(await count(t.downgrade, 'users')).toBe(4);
    expect(seatsOf((await entitlements(t.downgrade, who)).body)).toMatchObject({ value: 2, use: 4 });
  });

  it('the plan form offers the declared features as choices and edits the limits', async () => {
    const res = await t.app
      .http()
      .get('/admin/billing/plans/new')
      .set('Cookie', await operator());
    expect(res.status).toBe(200);
    for (const feature of ['webhook.endpoints', 'file.public_links'])
      expect(res.text).toMatch(
        new RegExp(
          `type="checkbox"[^>]*name="features"[^>]*value="${feature.replace('.', '\\.')}"|value="${feature.replace('.', '\\.')}"[^>]*name="features"`,
        ),
      );
    expect(res.text).toMatch(/name="limits"/);
  });

  it('a plan naming an undeclared feature or limit is 422', async () => {
    const base = { name: 'x', price: 0, currency: 'EUR', interval: 'month', active: true };
    const feature = await t.app
      .http()
      .post('/api/v1/billing/plans')
      .set('Cookie', await operator())
      .send({ ...base, code: 'unknown-feature', features: ['api'] });
    expect(feature.status).toBe(422);
    expect(feature.body.code).toBe('VALIDATION_FAILED');
    const limit = await t.app
      .http()
      .post('/api/v1/billing/plans')
      .set('Cookie', await operator())
      .send({ ...base, code: 'unknown-limit', features: [], limits: { 'user.chairs': 1 } });
    expect(limit.status).toBe(422);
    expect(limit.body.errors).toEqual([expect.objectContaining({ pointer: '/body/limits/user.chairs' })]);
  });
});
