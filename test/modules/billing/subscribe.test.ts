import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createCustomer, signInAs } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import {
  DAY,
  billingEvents,
  billingWorld,
  cancel,
  createPlan,
  readSubscription,
  renew,
  setOutcome,
  subscribe,
  subscription,
  toPeriodEnd,
  type BillingWorld,
} from './support.ts';

let world: BillingWorld;
let n = 0;

beforeAll(async () => {
  world = await billingWorld('subscribe-home');
});
afterAll(async () => {
  await world?.app.close();
});
beforeEach(async () => {
  setOutcome(world, 'settle');
  world.clock.reset();
  // Each test gets a tenant of its own: the subscription is one per tenant.
  const slug = `subscribe-${++n}`;
  const customer: TenantRef = await createCustomer(world.app, slug);
  world.customer = customer;
  world.host = `${slug}.localhost`;
  world.cookie = (await signInAs(world.app, customer, ['billing:read', 'billing:manage'])).cookie;
});

const sandboxCharges = async (tenantId: string) =>
  (
    await world.app.services.db.pool.query(
      `select * from billing_sandbox_charges where tenant_id = $1 order by created_at`,
      [tenantId],
    )
  ).rows;

describe('Subscription: a singleton at /api/v1/billing/subscription', () => {
  it('GET is 404 NOT_FOUND until the first subscribe; there is no PUT, PATCH or DELETE', async () => {
    const before = await readSubscription(world);
    expect(before.status).toBe(404);
    expect(before.body.code).toBe('NOT_FOUND');
    for (const method of ['put', 'patch', 'delete'] as const) {
      const res = await world.app
        .http(world.host)
        [method]('/api/v1/billing/subscription')
        .set('Cookie', world.cookie)
        .send({ price: 0 });
      expect([404, 405], method).toContain(res.status);
      expect(await subscription(world)).toBeUndefined();
    }
  });

  it("OpenAPI documents subscribe's 402 PAYMENT_DECLINED and 409 PERIOD_OWED, and no PUT", async () => {
    const doc = (await world.app.http().get('/api/v1/openapi.json')).body;
    const path = doc.paths['/api/v1/billing/subscription'];
    expect(Object.keys(path)).toEqual(['get']);
    const responses = doc.paths['/api/v1/billing/subscription/subscribe'].post.responses;
    expect(responses['402'].description).toMatch(/PAYMENT_DECLINED/);
    expect(responses['409'].description).toMatch(/PERIOD_OWED/);
    expect(doc.paths['/api/v1/billing/subscription/cancel'].post.responses['409'].description).toMatch(/PERIOD_OWED/);
  });

  it('a customer can never write its period or price: the subscribe body takes planId alone', async () => {
    const plan = await createPlan(world, { price: 0 });
    const res = await world.app
      .http(world.host)
      .post('/api/v1/billing/subscription/subscribe')
      .set('Cookie', world.cookie)
      .send({ planId: plan.id, price: 0, periodEnd: '2099-01-01T00:00:00Z' });
    expect(res.status).toBe(422);
    expect(await subscription(world)).toBeUndefined();
  });
});

describe('subscribe: first subscribe', () => {
  it('a free plan (price 0) becomes active at once, anchored on the day it started, publishing billing.subscribed', async () => {
    world.clock.set(new Date('2026-11-10T09:30:00Z'));
    const plan = await createPlan(world, { price: 0, currency: 'USD' });
    const res = await subscribe(world, plan.id);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      planId: plan.id,
      status: 'active',
      price: 0,
      currency: 'USD',
      anchorDay: 10,
      trialUsedAt: null,
      attemptCount: 0,
      cancelAtPeriodEnd: false,
    });
    // The clock runs on from where it was set: compare to the second.
    expect(res.body.periodStart.slice(0, 19)).toBe('2026-11-10T09:30:00');
    expect(res.body.periodEnd).toBe(res.body.periodStart.replace('2026-11-10', '2026-12-10'));
    expect((await readSubscription(world)).body).toEqual(res.body);
    expect((await billingEvents(world)).map((e) => e.name)).toEqual([
      'billing.subscribed',
      'billing.subscription.created',
    ]);
  });

  it('a paid plan with the trial unused becomes trial for billing.trial_days and sets trialUsedAt; nothing is charged', async () => {
    world.clock.set(new Date('2026-11-01T00:00:00Z'));
    const plan = await createPlan(world, { price: 2500 });
    const res = await subscribe(world, plan.id);
    expect(res.body).toMatchObject({ status: 'trial', price: 2500, currency: 'EUR' });
    expect(res.body.trialUsedAt).toBe(res.body.periodStart);
    expect(res.body.trialUsedAt.slice(0, 19)).toBe('2026-11-01T00:00:00');
    expect(Date.parse(res.body.periodEnd) - Date.parse(res.body.periodStart)).toBe(14 * DAY);
    expect(await sandboxCharges(world.customer.id)).toEqual([]);
  });

  it('an inactive or unknown plan is 422, storing nothing', async () => {
    const inactive = await createPlan(world, { active: false });
    for (const planId of [inactive.id, '00000000-0000-4000-8000-000000000000']) {
      const res = await subscribe(world, planId);
      expect(res.status).toBe(422);
      expect(res.body.code).toBe('VALIDATION_FAILED');
    }
    expect(await subscription(world)).toBeUndefined();
    expect(await billingEvents(world)).toEqual([]);
  });

  it('needs billing:manage', async () => {
    const plan = await createPlan(world, { price: 0 });
    const reader = (await signInAs(world.app, world.customer, ['billing:read'])).cookie;
    expect((await subscribe(world, plan.id, reader)).status).toBe(403);
  });
});

describe('subscribe: a paid first period with no trial left is charged in the request (three steps)', () => {
  /** A tenant whose trial was used: trial, cancelled now, ended by the renewal. */
  async function trialSpent(): Promise<void> {
    const plan = await createPlan(world, { price: 100 });
    await subscribe(world, plan.id);
    await cancel(world, false);
    await toPeriodEnd(world);
    expect((await renew(world)).summary).toMatchObject({ action: 'ended' });
    world.clock.reset();
  }

  it('a settled charge makes it active for its first period, with one sandbox charge and its receipt', async () => {
    await trialSpent();
    const plan = await createPlan(world, { price: 4900, currency: 'GBP' });
    const res = await subscribe(world, plan.id);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ status: 'active', price: 4900, currency: 'GBP', planId: plan.id, endedAt: null });
    expect(res.body.trialUsedAt).not.toBeNull();
    const charges = await sandboxCharges(world.customer.id);
    expect(charges).toHaveLength(1);
    expect(charges[0]).toMatchObject({ amount: 4900, currency: 'GBP', outcome: 'settled' });
    const { rows } = await world.app.services.db.pool.query(
      `select outcome, recorded_at from billing_charges where tenant_id = $1 and amount = 4900`,
      [world.customer.id],
    );
    expect(rows).toEqual([{ outcome: 'settled', recorded_at: expect.any(Date) }]);
  });

  it('a decline is 402 PAYMENT_DECLINED and stores no subscription (the ended one stays as it was)', async () => {
    await trialSpent();
    const before = await subscription(world);
    const events = (await billingEvents(world)).length;
    setOutcome(world, 'decline');
    const plan = await createPlan(world, { price: 4900 });
    const res = await subscribe(world, plan.id);
    expect(res.status).toBe(402);
    expect(res.body.code).toBe('PAYMENT_DECLINED');
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(await subscription(world)).toEqual(before);
    expect((await billingEvents(world)).length).toBe(events);
  });

  it('with billing.trial_days 0 there is no trial: the first subscribe charges, and a decline stores nothing at all', async () => {
    const noTrial = await billingWorld('subscribe-notrial', { trialDays: 0 });
    try {
      const plan = await createPlan(noTrial, { price: 700 });
      setOutcome(noTrial, 'decline');
      const declined = await subscribe(noTrial, plan.id);
      expect(declined.status).toBe(402);
      expect((await readSubscription(noTrial)).status).toBe(404);
      expect(await billingEvents(noTrial)).toEqual([]);
      setOutcome(noTrial, 'settle');
      const res = await subscribe(noTrial, plan.id);
      expect(res.body).toMatchObject({ status: 'active', trialUsedAt: null, price: 700 });
    } finally {
      await noTrial.app.close();
    }
  });
});

describe('subscribe: later calls', () => {
  it('the same plan again changes nothing and publishes nothing', async () => {
    const plan = await createPlan(world, { price: 0 });
    const first = await subscribe(world, plan.id);
    const events = (await billingEvents(world)).length;
    const again = await subscribe(world, plan.id);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect((await billingEvents(world)).length).toBe(events);
  });

  it('a different plan becomes pendingPlanId, applied at the next renewal, publishing billing.subscribed', async () => {
    const current = await createPlan(world, { price: 0 });
    const next = await createPlan(world, { price: 0, interval: 'year' });
    await subscribe(world, current.id);
    const res = await subscribe(world, next.id);
    expect(res.body).toMatchObject({ planId: current.id, pendingPlanId: next.id });
    expect((await billingEvents(world)).at(-1)).toMatchObject({
      name: 'billing.subscribed',
      payload: { pendingPlanId: next.id },
    });
  });

  it('a different plan while a period is owed for (past_due) is 409 PERIOD_OWED', async () => {
    const plan = await createPlan(world, { price: 100 });
    const other = await createPlan(world, { price: 100 });
    await subscribe(world, plan.id);
    setOutcome(world, 'decline');
    await toPeriodEnd(world);
    expect((await renew(world)).summary).toMatchObject({ action: 'past_due' });
    world.clock.reset();
    const res = await subscribe(world, other.id);
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('PERIOD_OWED');
    expect((await subscription(world)).pending_plan_id).toBeNull();
  });
});

describe('cancel', () => {
  it('atPeriodEnd true sets cancelAtPeriodEnd and publishes billing.cancelled (reason customer)', async () => {
    const plan = await createPlan(world, { price: 0 });
    await subscribe(world, plan.id);
    const res = await cancel(world, true);
    expect(res.body).toMatchObject({ status: 'active', cancelAtPeriodEnd: true });
    expect((await billingEvents(world)).at(-1)).toMatchObject({
      name: 'billing.cancelled',
      payload: { reason: 'customer' },
    });
  });

  it('atPeriodEnd false cancels now (billing.cancelled, reason customer)', async () => {
    const plan = await createPlan(world, { price: 0 });
    await subscribe(world, plan.id);
    const res = await cancel(world, false);
    expect(res.body).toMatchObject({ status: 'cancelled', endedAt: null });
    expect((await billingEvents(world)).at(-1)).toMatchObject({
      name: 'billing.cancelled',
      payload: { reason: 'customer' },
    });
  });

  it('cancel now while a period is owed for is 409 PERIOD_OWED', async () => {
    const plan = await createPlan(world, { price: 100 });
    await subscribe(world, plan.id);
    setOutcome(world, 'decline');
    await toPeriodEnd(world);
    await renew(world);
    world.clock.reset();
    const res = await cancel(world, false);
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('PERIOD_OWED');
    expect((await subscription(world)).status).toBe('past_due');
  });

  it('before any subscribe is 404', async () => {
    expect((await cancel(world, true)).status).toBe(404);
  });

  it('an ended subscription may subscribe again, without a second trial', async () => {
    const plan = await createPlan(world, { price: 300 });
    await subscribe(world, plan.id);
    await cancel(world, false);
    await toPeriodEnd(world);
    await renew(world);
    world.clock.set(new Date(world.clock.now().getTime() + DAY));
    const again = await subscribe(world, plan.id);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toMatchObject({ status: 'active', endedAt: null, price: 300 });
  });
});
