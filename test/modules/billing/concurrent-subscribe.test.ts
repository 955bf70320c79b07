import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs } from '../../helpers/app.ts';
import {
  billingEvents,
  billingWorld,
  createPlan,
  setOutcome,
  subscribe,
  subscription,
  type BillingWorld,
} from './support.ts';

/**
 * Issue 27, point 7: ten simultaneous subscribes to the same plan, on a tenant with no
 * subscription, answer as a serial repeat does (all 200, one subscription, one billing.subscribed)
 * where they used to give 5 × 409 naming subscriptions_one_per_tenant; a paid first period is
 * charged once, whichever of them calls the provider.
 */
let trial: BillingWorld;
let paid: BillingWorld;
let n = 0;

beforeAll(async () => {
  [trial, paid] = await Promise.all([
    billingWorld('concurrent-trial'),
    billingWorld('concurrent-paid', { trialDays: 0 }),
  ]);
});
afterAll(async () => {
  await Promise.all([trial?.app.close(), paid?.app.close()]);
});

/** A tenant of its own with no subscription, and a cookie that may subscribe. */
async function freshTenant(world: BillingWorld): Promise<void> {
  const slug = `concurrent-${++n}`;
  world.customer = await createCustomer(world.app, slug);
  world.host = `${slug}.localhost`;
  world.cookie = (await signInAs(world.app, world.customer, ['billing:read', 'billing:manage'])).cookie;
}

async function tenSubscribes(world: BillingWorld, planId: string) {
  const answers = await Promise.all(Array.from({ length: 10 }, () => subscribe(world, planId)));
  for (const res of answers) {
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(JSON.stringify(res.body)).not.toMatch(/subscriptions_one_per_tenant|_key\b|_unique\b/);
  }
  const ids = new Set(answers.map((r) => r.body.id));
  expect(ids.size, 'every answer is the one subscription').toBe(1);
  expect((await subscription(world)).id).toBe([...ids][0]);
  const subscribed = (await billingEvents(world)).filter((e) => e.name === 'billing.subscribed');
  expect(subscribed, 'billing.subscribed once, as a serial repeat publishes nothing').toHaveLength(1);
  return answers;
}

describe('ten simultaneous subscribes to the same plan', () => {
  it('a paid plan with the trial unused: all 200, one trial', async () => {
    await freshTenant(trial);
    const plan = await createPlan(trial, { price: 2500 });
    const answers = await tenSubscribes(trial, plan.id);
    expect(answers[0]!.body.status).toBe('trial');
  });

  it('a free plan: all 200, one active subscription', async () => {
    await freshTenant(trial);
    const plan = await createPlan(trial, { price: 0 });
    const answers = await tenSubscribes(trial, plan.id);
    expect(answers[0]!.body.status).toBe('active');
  });

  it('a paid plan with no trial: all 200, and the first period is charged once', async () => {
    setOutcome(paid, 'settle');
    await freshTenant(paid);
    const plan = await createPlan(paid, { price: 1900 });
    const answers = await tenSubscribes(paid, plan.id);
    expect(answers[0]!.body).toMatchObject({ status: 'active', price: 1900 });
    const { rows: taken } = await paid.app.services.db.pool.query(
      'select amount from billing_sandbox_charges where tenant_id = $1',
      [paid.customer.id],
    );
    expect(taken, 'the provider took the money once').toEqual([{ amount: 1900 }]);
    const { rows: ledger } = await paid.app.services.db.pool.query(
      'select amount, outcome from billing_charges where tenant_id = $1',
      [paid.customer.id],
    );
    expect(ledger).toEqual([{ amount: 1900, outcome: 'settled' }]);
  });
});
