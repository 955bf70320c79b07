import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createCustomer, signInAs } from '../../helpers/app.ts';
import {
  billingEvents,
  billingWorld,
  cancel,
  createPlan,
  renew,
  setOutcome,
  subscribe,
  toPeriodEnd,
  type BillingWorld,
} from './support.ts';

let world: BillingWorld;

beforeAll(async () => {
  world = await billingWorld('plans-acme');
});
afterAll(async () => {
  await world?.app.close();
});
beforeEach(() => setOutcome(world, 'settle'));

const plans = () => world.app.http();

describe('Plan: the operator-owned price list every tenant reads (SPEC Plan, Billing endpoints)', () => {
  it('has five routes: list, create, read, PATCH and soft DELETE, with billing.plan.created/.updated/.deleted', async () => {
    const plan = await createPlan(world, {
      code: 'starter',
      name: 'Starter',
      price: 900,
      currency: 'JPY',
      interval: 'year',
      features: ['file.public_links', 'webhook.endpoints'],
      active: true,
    });
    expect(plan).toMatchObject({
      code: 'starter',
      name: 'Starter',
      price: 900,
      currency: 'JPY',
      interval: 'year',
      features: ['file.public_links', 'webhook.endpoints'],
      active: true,
    });
    const listed = await plans().get('/api/v1/billing/plans?sort=code').set('Cookie', world.operator);
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((p: { code: string }) => p.code)).toContain('starter');
    const patched = await plans()
      .patch(`/api/v1/billing/plans/${plan.id}`)
      .set('Cookie', world.operator)
      .send({ price: 1200, active: false });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({ price: 1200, active: false });
    const deleted = await plans().delete(`/api/v1/billing/plans/${plan.id}`).set('Cookie', world.operator);
    expect(deleted.status).toBe(204);
    expect((await plans().get(`/api/v1/billing/plans/${plan.id}`).set('Cookie', world.operator)).status).toBe(404);
    const { rows } = await world.app.services.db.pool.query(`select deleted_at from plans where id = $1`, [plan.id]);
    expect(rows[0].deleted_at).toBeInstanceOf(Date);
    const names = (await billingEvents(world, world.app.operator))
      .filter((e) => (e.payload as { id?: string }).id === plan.id)
      .map((e) => e.name);
    expect(names).toEqual(['billing.plan.created', 'billing.plan.updated', 'billing.plan.deleted']);
  });

  it('every tenant reads the same list with billing:read; a customer cannot write it (403 AUTH_NOT_OPERATOR)', async () => {
    const plan = await createPlan(world);
    const reader = (await signInAs(world.app, world.customer, ['billing:read'])).cookie;
    const read = await world.app.http(world.host).get(`/api/v1/billing/plans/${plan.id}`).set('Cookie', reader);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(plan);
    const write = await world.app
      .http(world.host)
      .post('/api/v1/billing/plans')
      .set('Cookie', (await signInAs(world.app, world.customer, ['*'])).cookie)
      .send({ ...plan, id: undefined });
    expect(write.status).toBe(403);
    expect(write.body.code).toBe('AUTH_NOT_OPERATOR');
  });

  it('code is unique among live plans and follows ^[a-z0-9][a-z0-9-]{0,49}$', async () => {
    await createPlan(world, { code: 'unique-one' });
    const again = await plans().post('/api/v1/billing/plans').set('Cookie', world.operator).send({
      code: 'unique-one',
      name: 'x',
      price: 0,
      currency: 'EUR',
      interval: 'month',
      features: [],
      active: true,
    });
    expect(again.status).toBe(409);
    for (const code of ['-leading', 'Upper', 'a'.repeat(51), 'with space']) {
      const bad = await plans()
        .post('/api/v1/billing/plans')
        .set('Cookie', world.operator)
        .send({ code, name: 'x', price: 0, currency: 'EUR', interval: 'month', features: [], active: true });
      expect(bad.status, code).toBe(422);
      expect(bad.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
  });

  it('currency must be an ISO 4217 code in use: ABC and the test code XTS are refused with 422, on create and PATCH', async () => {
    for (const currency of ['ABC', 'XTS', 'eur']) {
      const bad = await plans()
        .post('/api/v1/billing/plans')
        .set('Cookie', world.operator)
        .send({
          code: `cur-${currency.toLowerCase()}`,
          name: 'x',
          price: 1,
          currency,
          interval: 'month',
          features: [],
          active: true,
        });
      expect(bad.status, currency).toBe(422);
      expect(bad.body.code).toBe('VALIDATION_FAILED');
    }
    const plan = await createPlan(world, { currency: 'CHF' });
    const patch = await plans()
      .patch(`/api/v1/billing/plans/${plan.id}`)
      .set('Cookie', world.operator)
      .send({ currency: 'ZZZ' });
    expect(patch.status).toBe(422);
    expect(patch.body.errors).toEqual([{ pointer: '/body/currency', message: expect.any(String) }]);
  });

  it('price is an integer of at least 0 and interval is month or year', async () => {
    for (const change of [{ price: -1 }, { price: 1.5 }, { interval: 'week' }]) {
      const bad = await plans()
        .post('/api/v1/billing/plans')
        .set('Cookie', world.operator)
        .send({
          code: 'bad-plan',
          name: 'x',
          price: 1,
          currency: 'EUR',
          interval: 'month',
          features: [],
          active: true,
          ...change,
        });
      expect(bad.status, JSON.stringify(change)).toBe(422);
    }
  });
});

describe('Plan delete: 409 PLAN_IN_USE while any subscription in any tenant is on the plan', () => {
  it('refuses the delete of a subscribed plan, deleting and publishing nothing; allows it once the subscription ended', async () => {
    const plan = await createPlan(world, { price: 0 });
    expect((await subscribe(world, plan.id)).status).toBe(200);
    const before = (await billingEvents(world, world.app.operator)).length;
    const refused = await plans().delete(`/api/v1/billing/plans/${plan.id}`).set('Cookie', world.operator);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('PLAN_IN_USE');
    expect((await billingEvents(world, world.app.operator)).length).toBe(before);
    expect((await plans().get(`/api/v1/billing/plans/${plan.id}`).set('Cookie', world.operator)).status).toBe(200);

    // Cancelled now, the subscription is still on the plan until its period is over.
    expect((await cancel(world, false)).status).toBe(200);
    expect((await plans().delete(`/api/v1/billing/plans/${plan.id}`).set('Cookie', world.operator)).body.code).toBe(
      'PLAN_IN_USE',
    );
    await toPeriodEnd(world);
    expect((await renew(world)).summary).toMatchObject({ action: 'ended' });
    world.clock.reset();
    expect((await plans().delete(`/api/v1/billing/plans/${plan.id}`).set('Cookie', world.operator)).status).toBe(204);
  });

  it('counts a plan chosen for the next period (pendingPlanId) as in use', async () => {
    const current = await createPlan(world, { price: 0 });
    const next = await createPlan(world, { price: 0 });
    const customer2 = await createCustomer(world.app, 'plans-pending');
    const cookie2 = (await signInAs(world.app, customer2, ['billing:read', 'billing:manage'])).cookie;
    expect((await subscribe(world, current.id, cookie2, 'plans-pending.localhost')).status).toBe(200);
    expect((await subscribe(world, next.id, cookie2, 'plans-pending.localhost')).body.pendingPlanId).toBe(next.id);
    const refused = await plans().delete(`/api/v1/billing/plans/${next.id}`).set('Cookie', world.operator);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('PLAN_IN_USE');
  });
});
