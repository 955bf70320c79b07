import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createCustomer, signInAs } from '../../helpers/app.ts';
import { paymentProvider, usePaymentProvider, type PaymentProvider } from '../../../modules/billing/provider.ts';
import { periodEnd } from '../../../modules/billing/periods.ts';
import {
  DAY,
  billingEvents,
  billingWorld,
  cancel,
  createPlan,
  renew,
  sandbox,
  setOutcome,
  subscribe,
  subscription,
  toPeriodEnd,
  type BillingWorld,
} from './support.ts';

let world: BillingWorld;
let provider: PaymentProvider;
let n = 0;

beforeAll(async () => {
  world = await billingWorld('renew-home');
  provider = paymentProvider(world.app.services);
});
afterAll(async () => {
  await world?.app.close();
});
beforeEach(async () => {
  setOutcome(world, 'settle');
  world.clock.reset();
  const slug = `renew-${++n}`;
  world.customer = await createCustomer(world.app, slug);
  world.host = `${slug}.localhost`;
  world.cookie = (await signInAs(world.app, world.customer, ['billing:read', 'billing:manage'])).cookie;
});
afterEach(() => usePaymentProvider(world.app.services, provider));

const charges = async () =>
  (
    await world.app.services.db.pool.query(
      `select * from billing_sandbox_charges where tenant_id = $1 order by created_at`,
      [world.customer.id],
    )
  ).rows;
const eventNames = async () =>
  (await billingEvents(world)).map((e) => e.name).filter((name) => !name.startsWith('billing.subscription.'));

/** A paid subscription whose trial ends, then the clock just past its period end. */
async function paidAndDue(price = 1500): Promise<{ id: string }> {
  const plan = await createPlan(world, { price });
  expect((await subscribe(world, plan.id)).body.status).toBe('trial');
  await toPeriodEnd(world);
  return plan;
}

describe('billing-renew: the SPEC state table', () => {
  it('does nothing before the period ends', async () => {
    const plan = await createPlan(world, { price: 0 });
    await subscribe(world, plan.id);
    expect((await renew(world)).summary).toEqual({ action: 'none' });
  });

  it('any | free plan: renewed (billing.renewed), period advanced, status active', async () => {
    const plan = await createPlan(world, { price: 0 });
    const first = (await subscribe(world, plan.id)).body;
    await toPeriodEnd(world);
    expect((await renew(world)).summary).toEqual({ action: 'renewed' });
    const row = await subscription(world);
    expect(row.status).toBe('active');
    expect(row.period_start.toISOString()).toBe(first.periodEnd);
    expect(await charges()).toEqual([]);
    expect((await eventNames()).at(-1)).toBe('billing.renewed');
  });

  it('trial | settled charge: active, the period advanced, price stamped, attemptCount 0', async () => {
    await paidAndDue(1500);
    const before = await subscription(world);
    const outcome = await renew(world);
    expect(outcome.summary).toEqual({ action: 'renewed', outcome: 'settled' });
    const row = await subscription(world);
    expect(row).toMatchObject({ status: 'active', attempt_count: 0, past_due_since: null, price: 1500 });
    expect(row.period_start).toEqual(before.period_end);
    expect(row.period_end).toEqual(periodEnd(before.period_end, 'month', before.anchor_day));
    expect(await charges()).toMatchObject([
      {
        amount: 1500,
        outcome: 'settled',
        idempotency_key: `${world.customer.id}:${before.period_end.toISOString()}:1`,
      },
    ]);
    expect((await eventNames()).at(-1)).toBe('billing.renewed');
  });

  it('first failure: past_due with billing.past_due once; later nights count attempts with new keys, publish nothing, and do not advance the period', async () => {
    await paidAndDue();
    const before = await subscription(world);
    setOutcome(world, 'decline');
    expect((await renew(world)).summary).toEqual({ action: 'past_due', outcome: 'declined' });
    const pastDue = await subscription(world);
    expect(pastDue).toMatchObject({ status: 'past_due', attempt_count: 1 });
    expect(pastDue.past_due_since).toBeInstanceOf(Date);
    expect(pastDue.period_end).toEqual(before.period_end);

    world.clock.advance(DAY);
    setOutcome(world, 'error');
    expect((await renew(world)).summary).toEqual({ action: 'failed_again', outcome: 'error' });
    const second = await subscription(world);
    expect(second).toMatchObject({
      status: 'past_due',
      attempt_count: 2,
      period_end: before.period_end,
      past_due_since: pastDue.past_due_since,
    });
    expect((await eventNames()).filter((e) => e === 'billing.past_due')).toHaveLength(1);
    expect((await charges()).map((c) => c.idempotency_key)).toEqual(
      [1, 2].map((a) => `${world.customer.id}:${before.period_end.toISOString()}:${a}`),
    );

    // A settled retry renews and clears the dunning state.
    world.clock.advance(DAY);
    setOutcome(world, 'settle');
    expect((await renew(world)).summary).toEqual({ action: 'renewed', outcome: 'settled' });
    expect(await subscription(world)).toMatchObject({
      status: 'active',
      attempt_count: 0,
      past_due_since: null,
      period_start: before.period_end,
    });
  });

  it('an error outcome is a failure too: past_due', async () => {
    await paidAndDue();
    setOutcome(world, 'error');
    expect((await renew(world)).summary).toEqual({ action: 'past_due', outcome: 'error' });
  });

  it('past_due longer than 7 days: cancelled, billing.cancelled with reason dunning; at 7 days it still retries', async () => {
    await paidAndDue();
    setOutcome(world, 'decline');
    await renew(world);
    const since = (await subscription(world)).past_due_since as Date;
    world.clock.set(new Date(since.getTime() + 7 * DAY - 60_000));
    expect((await renew(world)).summary).toMatchObject({ action: 'failed_again' });
    world.clock.set(new Date(since.getTime() + 7 * DAY + 60_000));
    expect((await renew(world)).summary).toEqual({ action: 'cancelled' });
    const row = await subscription(world);
    expect(row.status).toBe('cancelled');
    expect(row.ended_at).toBeInstanceOf(Date);
    expect((await billingEvents(world)).at(-1)).toEqual({ name: 'billing.cancelled', payload: { reason: 'dunning' } });
    expect(await charges()).toHaveLength(2);
  });

  it('any | cancel at period end: cancelled when the period ends, charging nothing', async () => {
    const plan = await createPlan(world, { price: 800 });
    await subscribe(world, plan.id);
    await cancel(world, true);
    world.clock.advance(DAY);
    expect((await renew(world)).summary).toEqual({ action: 'none' });
    expect((await subscription(world)).status).toBe('trial');
    await toPeriodEnd(world);
    expect((await renew(world)).summary).toEqual({ action: 'cancelled' });
    expect(await subscription(world)).toMatchObject({ status: 'cancelled', ended_at: expect.any(Date) });
    expect(await charges()).toEqual([]);
  });

  it('cancelled | period over: ends (endedAt set), with no charge and no event', async () => {
    const plan = await createPlan(world, { price: 800 });
    await subscribe(world, plan.id);
    await cancel(world, false);
    const events = (await billingEvents(world)).length;
    await toPeriodEnd(world);
    expect((await renew(world)).summary).toEqual({ action: 'ended' });
    expect((await subscription(world)).ended_at).toBeInstanceOf(Date);
    expect((await billingEvents(world)).length).toBe(events);
    expect((await renew(world)).summary).toEqual({ action: 'none' });
  });
});

describe('billing-renew: plan changes and prices apply at the next period', () => {
  it('a pending plan is charged and applied at the renewal, not before; its price is stamped then', async () => {
    const current = await createPlan(world, { price: 1000 });
    const next = await createPlan(world, { price: 3000, currency: 'USD', interval: 'year' });
    await subscribe(world, current.id);
    await subscribe(world, next.id);
    expect(await subscription(world)).toMatchObject({
      plan_id: current.id,
      pending_plan_id: next.id,
      price: 1000,
      currency: 'EUR',
    });
    await toPeriodEnd(world);
    expect((await renew(world)).summary).toEqual({ action: 'renewed', outcome: 'settled' });
    const row = await subscription(world);
    expect(row).toMatchObject({ plan_id: next.id, pending_plan_id: null, price: 3000, currency: 'USD' });
    expect(row.period_end).toEqual(periodEnd(row.period_start, 'year', row.anchor_day));
    expect(await charges()).toMatchObject([{ amount: 3000, currency: 'USD' }]);
  });

  it('a catalog price change reaches the subscription only when its next period starts', async () => {
    const plan = await createPlan(world, { price: 1000 });
    await subscribe(world, plan.id);
    const patched = await world.app
      .http()
      .patch(`/api/v1/billing/plans/${plan.id}`)
      .set('Cookie', world.operator)
      .send({ price: 1300 });
    expect(patched.status).toBe(200);
    expect((await subscription(world)).price).toBe(1000);
    await toPeriodEnd(world);
    await renew(world);
    expect((await subscription(world)).price).toBe(1300);
  });
});

describe('billing-renew: anchor day', () => {
  it('monthly periods end on the anchor day, clamped to short months (31: Nov 30, Dec 31, Jan 31, Feb 28, Mar 31)', async () => {
    world.clock.set(new Date('2026-10-31T08:00:00Z'));
    const plan = await createPlan(world, { price: 0 });
    const res = await subscribe(world, plan.id);
    expect(res.body.anchorDay).toBe(31);
    const ends: string[] = [(await subscription(world)).period_end.toISOString().slice(0, 10)];
    for (let i = 0; i < 4; i++) {
      await toPeriodEnd(world);
      await renew(world);
      ends.push((await subscription(world)).period_end.toISOString().slice(0, 10));
    }
    expect(ends).toEqual(['2026-11-30', '2026-12-31', '2027-01-31', '2027-02-28', '2027-03-31']);
  });

  it('periodEnd clamps to February 29 in a leap year, and a yearly period anchored on Feb 29 ends Feb 28', () => {
    expect(periodEnd(new Date('2028-01-31T10:00:00Z'), 'month', 31).toISOString()).toBe('2028-02-29T10:00:00.000Z');
    expect(periodEnd(new Date('2028-02-29T10:00:00Z'), 'month', 31).toISOString()).toBe('2028-03-31T10:00:00.000Z');
    expect(periodEnd(new Date('2028-02-29T10:00:00Z'), 'year', 29).toISOString()).toBe('2029-02-28T10:00:00.000Z');
    expect(periodEnd(new Date('2026-12-15T00:00:00Z'), 'month', 15).toISOString()).toBe('2027-01-15T00:00:00.000Z');
  });
});

describe('General rule 5: money is never taken while a transaction is open', () => {
  /** Wraps the provider: counts this database's connections inside a transaction during the charge. */
  function watching(seen: number[]): PaymentProvider {
    return {
      name: 'watching',
      async charge(request) {
        // The pool refuses a checkout inside a transaction of this async context, and no other
        // connection of the database may sit in one either.
        const { rows } = await world.app.services.db.pool.query<{ n: number }>(
          `select count(*)::int as n from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'`,
        );
        seen.push(rows[0]!.n);
        return provider.charge(request);
      },
    };
  }

  it('the renewal charges with no transaction open', async () => {
    const seen: number[] = [];
    usePaymentProvider(world.app.services, watching(seen));
    await paidAndDue();
    expect((await renew(world)).summary).toMatchObject({ outcome: 'settled' });
    expect(seen).toEqual([0]);
  });

  it('the first subscribe charges with no transaction open', async () => {
    const seen: number[] = [];
    await paidAndDue();
    await cancel(world, false);
    await renew(world);
    world.clock.reset();
    usePaymentProvider(world.app.services, watching(seen));
    const plan = await createPlan(world, { price: 999 });
    expect((await subscribe(world, plan.id)).status).toBe(200);
    expect(seen).toEqual([0]);
  });
});

describe('idempotency: a run that dies between the charge and the receipt charges nobody twice', () => {
  it('the rerun sends the same key, the provider replays the first outcome, and the period is paid once', async () => {
    await paidAndDue(2200);
    const before = await subscription(world);
    // The process dies right after the provider took the money: transaction 2 never runs.
    usePaymentProvider(world.app.services, {
      name: 'dies-after-charge',
      async charge(request) {
        await provider.charge(request);
        throw new Error('process killed after the charge');
      },
    });
    const crashed = await renew(world);
    expect(crashed.ok).toBe(false);
    expect(await subscription(world)).toEqual(before);
    const { rows: pending } = await world.app.services.db.pool.query(
      `select outcome from billing_charges where tenant_id = $1`,
      [world.customer.id],
    );
    expect(pending).toEqual([{ outcome: null }]);

    // Restarted; new charges would now be declined, but the key replays the settled one.
    usePaymentProvider(world.app.services, provider);
    setOutcome(world, 'decline');
    expect((await renew(world)).summary).toEqual({ action: 'renewed', outcome: 'settled' });
    expect(await charges()).toHaveLength(1);
    expect((await subscription(world)).period_start).toEqual(before.period_end);
    expect((await eventNames()).filter((e) => e === 'billing.renewed')).toHaveLength(1);
  });
});

describe('the sandbox provider honours idempotency keys across restarts', () => {
  it('the same key with the same parameters replays the first outcome; with other parameters it is an error', async () => {
    const key = `sandbox-test-${n}`;
    const request = { amount: 500, currency: 'EUR', tenantId: world.customer.id, idempotencyKey: key };
    setOutcome(world, 'decline');
    expect(await sandbox(world).charge(request)).toEqual({ outcome: 'declined' });
    setOutcome(world, 'settle');
    expect(await sandbox(world).charge(request)).toEqual({ outcome: 'declined' });
    // A new provider (a restart) reads the same store.
    const { SandboxProvider } = await import('../../../modules/billing/provider.ts');
    const restarted = new SandboxProvider(world.app.services, 'settle');
    expect(await restarted.charge(request)).toEqual({ outcome: 'declined' });
    expect((await restarted.charge({ ...request, amount: 501 })).outcome).toBe('error');
    expect(await charges()).toHaveLength(1);
    expect(await restarted.charge({ ...request, idempotencyKey: `${key}-new` })).toEqual({ outcome: 'settled' });
  });
});
