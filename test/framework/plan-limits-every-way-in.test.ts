import { beforeAll, describe, expect, it } from 'vitest';
import Type from 'typebox';
import { signInAs, type SignedIn } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { allModules } from '../../modules/index.ts';
import { defineEntity, defineModule, entity } from '../../framework/entity/define.ts';
import { runImport } from '../../framework/bulk/imports/run-import.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

/**
 * Issue 47, the ways in besides a create: a limit holds wherever a row starts counting again (an
 * endpoint PATCHed back to active, a deleted user or endpoint restored from its history, a
 * command), and for the rows of an import and of a batch, refused 403 PLAN_LIMIT_REACHED as a
 * single create is, under the same lock; a gated entity is refused FEATURE_NOT_IN_PLAN through a
 * batch, an import (its upload, and its worker when the plan lost the feature meanwhile) and a restore.
 */

/** A gated entity that can be imported (no secret shown once), over the test kit's widgets table. */
const gizmo = defineEntity({
  module: 'gatedprobe',
  name: 'gizmo',
  storage: { table: 'widgets' },
  fields: {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    size: Type.Integer({ minimum: 0, maximum: 1000 }),
    color: Type.String({ minLength: 1, maxLength: 30 }),
  },
  permissions: { read: 'widget:read', write: 'widget:write' },
  feature: 'gatedprobe.gizmos',
});
const gatedProbe = defineModule({
  name: 'gatedprobe',
  features: [{ name: 'gatedprobe.gizmos', description: 'Gizmos' }],
  entities: [entity(gizmo)],
});

const t = useTestApp({
  modules: [...allModules, testkitModule, gatedProbe],
  customers: ['active', 'race', 'restored', 'batched', 'imported', 'gated'],
});

const ENDPOINTS = '/api/v1/webhook/endpoints';
const USERS = '/api/v1/user/users';
const GIZMOS = '/api/v1/gatedprobe/gizmos';
const CUSTOMER = ['user:manage', 'user:read', 'webhook:manage', 'widget:read', 'widget:write'];
const host = (tenant: TenantRef) => `${tenant.slug}.localhost`;

let operatorCookie: string;
beforeAll(async () => {
  operatorCookie = (await signInAs(t.app, t.app.operator, ['tenant:manage'])).cookie;
});

/** The operator's override of the tenant's entitlements (the whole override: a PUT). */
async function override(tenant: TenantRef, body: { features?: string[]; limits?: Record<string, number | null> }) {
  const res = await t.app
    .http()
    .put(`/api/v1/tenant/tenants/${tenant.id}/entitlements`)
    .set('Cookie', operatorCookie)
    .send(body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

let n = 0;
const as = (tenant: TenantRef, who: SignedIn) => {
  const http = t.app.http(host(tenant));
  return {
    post: (path: string, body: object) => http.post(path).set('Cookie', who.cookie).send(body),
    patch: (path: string, body: object) => http.patch(path).set('Cookie', who.cookie).send(body),
    get: (path: string) => http.get(path).set('Cookie', who.cookie),
    delete: (path: string) => http.delete(path).set('Cookie', who.cookie),
  };
};

async function newEndpoint(tenant: TenantRef, who: SignedIn): Promise<string> {
  const res = await as(tenant, who).post(ENDPOINTS, {
    url: `https://hooks.example.com/again/${++n}`,
    events: ['task.sla_breached'],
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

async function activeEndpoints(tenant: TenantRef): Promise<number> {
  const { rows } = await t.app.services.db.pool.query<{ n: string }>(
    'select count(*) as n from webhook_endpoints where tenant_id = $1 and active and deleted_at is null',
    [tenant.id],
  );
  return Number(rows[0]!.n);
}

async function seatsTaken(tenant: TenantRef): Promise<number> {
  const { rows } = await t.app.services.db.pool.query<{ n: string }>(
    `select count(*) as n from users where tenant_id = $1 and status in ('active', 'invited') and deleted_at is null`,
    [tenant.id],
  );
  return Number(rows[0]!.n);
}

/** The id of the record's oldest revision (its create): the last of the first page, newest first. */
async function firstRevision(tenant: TenantRef, who: SignedIn, item: string): Promise<string> {
  const res = await as(tenant, who).get(`${item}/history`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.items.at(-1).operation).toBe('create');
  return res.body.items.at(-1).id;
}

describe('a webhook endpoint PATCHed back to active', () => {
  it('counts again: refused 403 PLAN_LIMIT_REACHED at the limit, a change that adds nothing passes', async () => {
    const who = await signInAs(t.app, t.active, CUSTOMER);
    const api = as(t.active, who);
    const kept = await newEndpoint(t.active, who);
    const paused = await newEndpoint(t.active, who);
    expect((await api.patch(`${ENDPOINTS}/${paused}`, { active: false })).status).toBe(200);
    await override(t.active, { limits: { 'webhook.endpoints': 1 } });

    const refused = await api.patch(`${ENDPOINTS}/${paused}`, { active: true });
    expect(refused.status, JSON.stringify(refused.body)).toBe(403);
    expect(refused.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(refused.body).toMatchObject({ code: 'PLAN_LIMIT_REACHED', limit: 'webhook.endpoints', value: 1, use: 1 });
    expect(await activeEndpoints(t.active)).toBe(1);

    // What does not make a row count passes: the inactive one's description, the active one's.
    expect((await api.patch(`${ENDPOINTS}/${paused}`, { description: 'paused' })).status).toBe(200);
    expect((await api.patch(`${ENDPOINTS}/${kept}`, { description: 'kept' })).status).toBe(200);
    // Once the active one is paused, the other may take its place.
    expect((await api.patch(`${ENDPOINTS}/${kept}`, { active: false })).status).toBe(200);
    expect((await api.patch(`${ENDPOINTS}/${paused}`, { active: true })).status).toBe(200);
    expect(await activeEndpoints(t.active)).toBe(1);
  });

  it('10 simultaneous reactivations at one free place: exactly one passes', async () => {
    const who = await signInAs(t.app, t.race, CUSTOMER);
    const api = as(t.race, who);
    const first = await newEndpoint(t.race, who);
    const paused: string[] = [];
    for (let i = 0; i < 10; i++) paused.push(await newEndpoint(t.race, who));
    await t.app.services.db.pool.query(
      'update webhook_endpoints set active = false where tenant_id = $1 and id <> $2',
      [t.race.id, first],
    );
    await override(t.race, { limits: { 'webhook.endpoints': 2 } });
    const answers = await Promise.all(paused.map((id) => api.patch(`${ENDPOINTS}/${id}`, { active: true })));
    expect(answers.map((r) => r.status).sort()).toEqual([200, ...Array(9).fill(403)]);
    for (const r of answers.filter((a) => a.status === 403))
      expect(r.body).toMatchObject({ code: 'PLAN_LIMIT_REACHED', limit: 'webhook.endpoints', value: 2, use: 2 });
    expect(await activeEndpoints(t.race)).toBe(2);
  });
});

describe('a restore from history', () => {
  it('that brings a deleted user back takes a seat: refused at the limit, as a re-invitation is', async () => {
    const who = await signInAs(t.app, t.restored, CUSTOMER);
    const api = as(t.restored, who);
    // Created through the entity's route, so its history starts with the create.
    const created = await api.post(USERS, { email: 'gone@restored.test' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const user = `${USERS}/${created.body.id}`;
    expect((await api.delete(user)).status).toBe(204);
    await override(t.restored, { limits: { 'user.seats': 1 } });
    const revision = await firstRevision(t.restored, who, user);

    const refused = await api.post(`${user}/restore`, { revision });
    expect(refused.status, JSON.stringify(refused.body)).toBe(403);
    expect(refused.body).toMatchObject({ code: 'PLAN_LIMIT_REACHED', limit: 'user.seats', value: 1, use: 1 });
    expect(await seatsTaken(t.restored)).toBe(1);
    // Invited again under another record: the same refusal.
    const again = await api.post('/api/v1/user/invitations', { email: 'gone@restored.test' });
    expect(again.body).toMatchObject({ code: 'PLAN_LIMIT_REACHED', limit: 'user.seats' });

    // With a seat free, the same restore passes.
    await override(t.restored, { limits: { 'user.seats': 2 } });
    const restored = await api.post(`${user}/restore`, { revision });
    expect(restored.status, JSON.stringify(restored.body)).toBe(200);
    expect(await seatsTaken(t.restored)).toBe(2);
  });

  it('that sets an endpoint back to active, or brings a deleted one back, is refused at the limit', async () => {
    const who = await signInAs(t.app, t.restored, CUSTOMER);
    const api = as(t.restored, who);
    await newEndpoint(t.restored, who);
    const paused = `${ENDPOINTS}/${await newEndpoint(t.restored, who)}`;
    const deleted = `${ENDPOINTS}/${await newEndpoint(t.restored, who)}`;
    expect((await api.patch(paused, { active: false })).status).toBe(200);
    expect((await api.delete(deleted)).status).toBe(204);
    await override(t.restored, { limits: { 'webhook.endpoints': 1 } });

    for (const item of [paused, deleted]) {
      const refused = await api.post(`${item}/restore`, { revision: await firstRevision(t.restored, who, item) });
      expect(refused.status, `${item}: ${JSON.stringify(refused.body)}`).toBe(403);
      expect(refused.body).toMatchObject({ code: 'PLAN_LIMIT_REACHED', limit: 'webhook.endpoints', use: 1 });
    }
    expect(await activeEndpoints(t.restored)).toBe(1);
  });

  it('of a gated entity is refused FEATURE_NOT_IN_PLAN once the plan lacks the feature', async () => {
    const who = await signInAs(t.app, t.gated, CUSTOMER);
    const api = as(t.gated, who);
    const made = await api.post(GIZMOS, { name: 'spinner', size: 3, color: 'red' });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const item = `${GIZMOS}/${made.body.id}`;
    const revision = await firstRevision(t.gated, who, item);
    expect((await api.delete(item)).status).toBe(204);
    await override(t.gated, { features: ['webhook.endpoints'] });
    const refused = await api.post(`${item}/restore`, { revision });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'FEATURE_NOT_IN_PLAN', feature: 'gatedprobe.gizmos' });
    await override(t.gated, {});
  });
});

describe('a batch', () => {
  it('refuses the invitation past the seats, the reactivation past the endpoints, and a gated create, and applies nothing', async () => {
    const who = await signInAs(t.app, t.batched, CUSTOMER);
    const api = as(t.batched, who);
    const paused = await newEndpoint(t.batched, who);
    expect((await api.patch(`${ENDPOINTS}/${paused}`, { active: false })).status).toBe(200);
    await newEndpoint(t.batched, who);
    await override(t.batched, { limits: { 'user.seats': 2, 'webhook.endpoints': 1 } });
    const batch = (requests: object[]) => api.post('/api/v1/batch', { requests });

    const seats = await batch([
      { method: 'POST', path: '/api/v1/user/invitations', body: { email: 'one@batched.test' } },
      { method: 'POST', path: '/api/v1/user/invitations', body: { email: 'two@batched.test' } },
    ]);
    expect(seats.status, JSON.stringify(seats.body)).toBe(403);
    expect(seats.body).toMatchObject({ code: 'PLAN_LIMIT_REACHED', limit: 'user.seats', value: 2, use: 2, index: 1 });
    expect(await seatsTaken(t.batched)).toBe(1);

    const created = await batch([{ method: 'POST', path: USERS, body: { email: 'three@batched.test' } }]);
    expect(created.status).toBe(200);
    const past = await batch([{ method: 'POST', path: USERS, body: { email: 'four@batched.test' } }]);
    expect(past.body).toMatchObject({ code: 'PLAN_LIMIT_REACHED', limit: 'user.seats', index: 0 });

    const reactivated = await batch([{ method: 'PATCH', path: `${ENDPOINTS}/${paused}`, body: { active: true } }]);
    expect(reactivated.status, JSON.stringify(reactivated.body)).toBe(403);
    expect(reactivated.body).toMatchObject({ code: 'PLAN_LIMIT_REACHED', limit: 'webhook.endpoints', index: 0 });
    expect(await activeEndpoints(t.batched)).toBe(1);

    await override(t.batched, { features: ['webhook.endpoints'] });
    const gated = await batch([{ method: 'POST', path: GIZMOS, body: { name: 'batched', size: 1, color: 'blue' } }]);
    expect(gated.status).toBe(403);
    expect(gated.body).toMatchObject({ code: 'FEATURE_NOT_IN_PLAN', feature: 'gatedprobe.gizmos', index: 0 });
  });
});

describe('an import', () => {
  const upload = (tenant: TenantRef, who: SignedIn, path: string, csv: string) =>
    t.app
      .http(host(tenant))
      .post(`${path}/import`)
      .set('Cookie', who.cookie)
      .attach('file', Buffer.from(csv), { filename: 'rows.csv', contentType: 'text/csv' });

  /** Runs the queued import as the worker would (no worker runs in this file). */
  async function run(tenant: TenantRef, accepted: { status: number; body: { id: string } }): Promise<string> {
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    await runImport(t.app.services, tenant.id, accepted.body.id);
    return accepted.body.id;
  }

  async function statusOf(tenant: TenantRef, who: SignedIn, id: string) {
    const res = await as(tenant, who).get(`/api/v1/imports/${id}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as { status: string; created: number; refused: number; refusals: { problem: { code: string } }[] };
  }

  it('creates users up to the seats and refuses each row past them with PLAN_LIMIT_REACHED', async () => {
    const who = await signInAs(t.app, t.imported, CUSTOMER);
    await override(t.imported, { limits: { 'user.seats': 2 } });
    const id = await run(
      t.imported,
      await upload(t.imported, who, USERS, 'email\na@imported.test\nb@imported.test\nc@imported.test\n'),
    );
    const status = await statusOf(t.imported, who, id);
    expect(status).toMatchObject({ status: 'done', created: 1, refused: 2 });
    expect(status.refusals.map((r) => r.problem.code)).toEqual(['PLAN_LIMIT_REACHED', 'PLAN_LIMIT_REACHED']);
    expect(await seatsTaken(t.imported)).toBe(2);
  });

  it('of a gated entity is refused at the upload without the feature, and row by row when the plan lost it before the worker ran', async () => {
    const who = await signInAs(t.app, t.gated, CUSTOMER);
    const csv = 'name,size,color\nimported-1,1,red\nimported-2,2,red\n';
    await override(t.gated, { features: ['webhook.endpoints'] });
    const refused = await upload(t.gated, who, GIZMOS, csv);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'FEATURE_NOT_IN_PLAN', feature: 'gatedprobe.gizmos' });

    await override(t.gated, {});
    const accepted = await upload(t.gated, who, GIZMOS, csv);
    await override(t.gated, { features: ['webhook.endpoints'] });
    const id = await run(t.gated, accepted);
    // The status route is the create's guard: read with the feature back.
    await override(t.gated, {});
    const status = await statusOf(t.gated, who, id);
    expect(status).toMatchObject({ status: 'done', created: 0, refused: 2 });
    expect(status.refusals.map((r) => r.problem.code)).toEqual(['FEATURE_NOT_IN_PLAN', 'FEATURE_NOT_IN_PLAN']);
    const { rows } = await t.app.services.db.pool.query<{ n: string }>(
      `select count(*) as n from widgets where tenant_id = $1 and name like 'imported-%'`,
      [t.gated.id],
    );
    expect(Number(rows[0]!.n)).toBe(0);
  });
});
