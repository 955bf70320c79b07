import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs } from '../../helpers/app.ts';
import { Worker, jobQueue, tenantJobQueue } from '../../../framework/events/worker.ts';
import { slotOf } from '../../../framework/events/jobs.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { renewJob } from '../../../modules/billing/renewal.ts';
import { paymentProvider, usePaymentProvider } from '../../../modules/billing/provider.ts';
import { billingWorld, createPlan, subscribe, subscription, type BillingWorld } from './support.ts';

/**
 * Every run of billing-renew renews every subscription due at its clock, whatever ran before
 * (issue 51). A run is a tick of the schedule (with its retries), a fan-out asked for by hand, or
 * one `npm run job`. Two runs of the same slot are two runs: the second renews what fell due since
 * the first, and charges nothing the first charged (the charge's idempotency key).
 */

let world: BillingWorld;
let worker: Worker;

beforeAll(async () => {
  world = await billingWorld('every-run');
  worker = new Worker(world.app.services);
  await worker.start({ schedule: false });
});
afterAll(async () => {
  await worker?.stop();
  await world?.app.close();
});

const pool = () => world.app.services.db.pool;

async function until<T>(what: string, probe: () => Promise<T | false | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The schedule's tick for a slot, sent as pg-boss's cron sends it; resolves once it and every run it queued settled. */
async function tick(slot: string): Promise<void> {
  const id = await worker.boss.send(jobQueue(renewJob.name), { slot });
  await until(`the tick of ${slot}`, async () => {
    const { rows } = await pool().query<{ state: string }>(`select state from pgboss.job where name = $1 and id = $2`, [
      jobQueue(renewJob.name),
      id,
    ]);
    return rows[0]?.state === 'completed';
  });
  await until('every run of the tick', async () => {
    const { rows } = await pool().query<{ open: number }>(
      `select count(*)::int as open from pgboss.job where name = $1 and state in ('created', 'retry', 'active')`,
      [tenantJobQueue(renewJob.name)],
    );
    return rows[0]!.open === 0;
  });
}

/** Whether a statement on the table is waiting for a lock another transaction holds. */
const waiting = async (table: string) =>
  (
    await pool().query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and position($1 in query) > 0`,
      [table],
    )
  ).rows[0]!.n > 0;

/** The charges the sandbox provider took from the tenant, oldest first. */
const charges = async (tenant: TenantRef) =>
  (
    await pool().query<{ idempotency_key: string; outcome: string }>(
      `select idempotency_key, outcome from billing_sandbox_charges where tenant_id = $1 order by created_at`,
      [tenant.id],
    )
  ).rows;

/** A tenant of its own, subscribed to a paid plan: in trial, its period ending in 14 days. */
async function subscribedTenant(slug: string): Promise<TenantRef> {
  world.customer = await createCustomer(world.app, slug);
  world.host = `${slug}.localhost`;
  world.cookie = (await signInAs(world.app, world.customer, ['billing:read', 'billing:manage'])).cookie;
  const plan = await createPlan(world, { price: 1200 });
  expect((await subscribe(world, plan.id)).body.status).toBe('trial');
  return world.customer;
}

describe('every run of billing-renew renews every subscription due at its clock, whatever ran before', () => {
  it('the same slot run twice renews a subscription that fell due again between the runs', async () => {
    world.clock.reset();
    const tenant = await subscribedTenant('every-run-again');
    const trial = await subscription(world, tenant);
    world.clock.set(new Date((trial.period_end as Date).getTime() + 60_000));
    const slot = slotOf(world.clock.now());

    await tick(slot);
    const first = await subscription(world, tenant);
    expect(first).toMatchObject({ status: 'active', period_start: trial.period_end });
    expect(await charges(tenant)).toHaveLength(1);

    // Between the runs its next period ends too; the slot is run again (an operator's rerun, the
    // bench's next stage, a tick caught up in the same minute).
    world.clock.set(new Date((first.period_end as Date).getTime() + 60_000));
    await tick(slot);
    const second = await subscription(world, tenant);
    expect(second).toMatchObject({ status: 'active', period_start: first.period_end });
    const taken = await charges(tenant);
    expect(taken.map((c) => c.outcome)).toEqual(['settled', 'settled']);
    expect(new Set(taken.map((c) => c.idempotency_key)).size).toBe(2);
  }, 60_000);

  it('a second run of a slot at the same clock finds nothing due: one renewal, one charge', async () => {
    world.clock.reset();
    const tenant = await subscribedTenant('every-run-once');
    const trial = await subscription(world, tenant);
    world.clock.set(new Date((trial.period_end as Date).getTime() + 60_000));
    const slot = slotOf(world.clock.now());

    await tick(slot);
    await tick(slot);
    const after = await subscription(world, tenant);
    expect(after).toMatchObject({ status: 'active', period_start: trial.period_end });
    expect(await charges(tenant)).toHaveLength(1);
    const { rows } = await pool().query<{ n: number }>(
      `select count(*)::int as n from pgboss.job where name = $1 and data->>'tenantId' = $2 and data->>'slot' = $3 and state = 'completed'`,
      [tenantJobQueue(renewJob.name), tenant.id, slot],
    );
    expect(rows[0]!.n).toBe(2);
  }, 60_000);

  it("two runs of a tenant's renewal at once charge once and renew once, without deadlocking each other", async () => {
    world.clock.reset();
    const tenant = await subscribedTenant('every-run-together');
    const trial = await subscription(world, tenant);
    world.clock.set(new Date((trial.period_end as Date).getTime() + 60_000));
    const slot = slotOf(world.clock.now());
    const job = worker.jobs.find(renewJob.name);

    // The provider holds the first run's answer until the second run is under way.
    const real = paymentProvider(world.app.services);
    let charged!: () => void;
    let answer!: () => void;
    const firstCharged = new Promise<void>((resolve) => (charged = resolve));
    const answered = new Promise<void>((resolve) => (answer = resolve));
    let calls = 0;
    usePaymentProvider(world.app.services, {
      name: 'holds-the-first-answer',
      async charge(request) {
        const result = await real.charge(request);
        if (++calls === 1) {
          charged();
          await answered;
        }
        return result;
      },
    });
    // Holds the second run between locking the subscription and recording its pending charge: the
    // charges table is closed to writes (reads go on, and the statement that opens every
    // transaction reads plans and subscriptions, never charges, so neither run waits there).
    const writes = await pool().connect();
    try {
      const first = worker.jobs.run(job, tenant, slot);
      await firstCharged;
      await writes.query('begin');
      await writes.query('lock table billing_charges in exclusive mode');
      const second = worker.jobs.run(job, tenant, slot);
      await until('the second run, the subscription locked, waiting to record its charge', () =>
        waiting('"billing_charges"'),
      );
      // The first run goes on to record its receipt while the second holds the subscription: it
      // must wait for the subscription (before writing the receipt), not for the charges table.
      answer();
      await until('the first run waiting for the subscription', () => waiting('"subscriptions"'));
      await writes.query('commit');

      const results = await Promise.allSettled([first, second]);
      expect(results.map((r) => (r.status === 'fulfilled' ? r.value : String(r.reason)))).toEqual([
        { action: 'renewed', outcome: 'settled' },
        { action: 'none', outcome: 'settled' },
      ]);
    } finally {
      answer();
      await writes.query('rollback').catch(() => {});
      writes.release();
      usePaymentProvider(world.app.services, real);
    }
    expect(await subscription(world, tenant)).toMatchObject({ status: 'active', period_start: trial.period_end });
    expect(await charges(tenant)).toHaveLength(1);
  }, 60_000);
});
