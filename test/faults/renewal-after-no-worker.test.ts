import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from '../../framework/events/worker.ts';
import { slotOf } from '../../framework/events/jobs.ts';
import { renewJob } from '../../modules/billing/renewal.ts';
import {
  DAY,
  billingWorld,
  createPlan,
  subscribe,
  subscription,
  type BillingWorld,
} from '../modules/billing/support.ts';

/**
 * Fault: no worker ran when a renewal fell due (issue 31, point 1). The subscription's period ended
 * three days before any worker ran the billing-renew schedule: the next run renews it, once (one
 * charge, the period advanced by one period); the night's fan-out retried queues nothing more, and
 * a run of the same night again, or the next night, runs and charges nothing more.
 */

let world: BillingWorld;
let worker: Worker | undefined;

beforeAll(async () => {
  world = await billingWorld('no-worker-renew');
});
afterAll(async () => {
  await worker?.stop();
  await world?.app.close();
});

const charges = async () =>
  (
    await world.app.services.db.pool.query(`select * from billing_sandbox_charges where tenant_id = $1`, [
      world.customer.id,
    ])
  ).rows;
const runsOf = async (slot: string) =>
  (
    await world.app.services.db.pool.query<{ state: string }>(
      `select state from pgboss.job where name like 'job-billing-renew%' and data->>'slot' = $1 and data->>'tenantId' = $2`,
      [slot, world.customer.id],
    )
  ).rows;

async function until<T>(what: string, probe: () => Promise<T | false | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('a renewal due while no worker ran', () => {
  it('happens on the next run of the schedule, once', async () => {
    const plan = await createPlan(world, { price: 1200 });
    expect((await subscribe(world, plan.id)).body.status).toBe('trial');
    const before = await subscription(world);
    // Three nights pass with no worker: the period ended three days ago.
    world.clock.set(new Date((before.period_end as Date).getTime() + 3 * DAY));

    worker = new Worker(world.app.services);
    await worker.start({ schedule: false });
    const night = slotOf(world.clock.now());
    const tick = randomUUID();
    // One run per served tenant: the operator's and the customer's.
    expect(await worker.fanOut(renewJob, night, tick)).toHaveLength(2);
    await until('the run of the night', async () => (await runsOf(night)).some((r) => r.state === 'completed'));
    const renewed = await subscription(world);
    expect(renewed.status).toBe('active');
    expect((renewed.period_start as Date).getTime()).toBe((before.period_end as Date).getTime());
    expect(await charges()).toHaveLength(1);

    // The night's fan-out retried (its tick retried under the same id): no run queued again.
    expect(await worker.fanOut(renewJob, night, tick)).toEqual([]);
    expect(await runsOf(night)).toHaveLength(1);
    // The night run again (an operator's rerun), and the next night: each runs, and charges nothing more.
    expect(await worker.fanOut(renewJob, night)).toHaveLength(2);
    const next = slotOf(new Date(world.clock.now().getTime() + DAY));
    await worker.fanOut(renewJob, next);
    await until('the runs of both nights', async () => {
      const runs = [...(await runsOf(night)), ...(await runsOf(next))];
      return runs.length === 3 && runs.every((r) => r.state === 'completed');
    });
    expect(await charges()).toHaveLength(1);
    expect((await subscription(world)).period_end).toEqual(renewed.period_end);
  }, 60_000);
});
