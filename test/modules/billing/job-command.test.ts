import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { npmRun, type Finished } from '../../e2e/processes.ts';
import { DAY, billingEvents, billingWorld, createPlan, subscribe, subscription, type BillingWorld } from './support.ts';

let world: BillingWorld;

beforeAll(async () => {
  world = await billingWorld('jobcmd-billing');
});
afterAll(async () => {
  await world?.app.close();
});

/** `npm run job -- billing-renew --at <time> --tenant <slug>`, from the repository root. */
function renewAt(at: Date, env: Record<string, string> = {}, timeoutMs = 60_000): Promise<Finished> {
  const settings = {
    TENANTRY_DATABASE_URL: world.app.databaseUrl,
    TENANTRY_SERVER_PUBLIC_HOST: 'operator.localhost',
    ...env,
  };
  return npmRun(
    'job',
    ['billing-renew', '--at', at.toISOString(), '--tenant', world.customer.slug],
    settings,
    timeoutMs,
  );
}

describe('npm run job -- billing-renew --at <ISO time>', () => {
  it('past-dues with TENANTRY_BILLING_SANDBOX_OUTCOME=decline, cancels past the 7 days of grace, as of --at', async () => {
    const plan = await createPlan(world, { price: 1200 });
    expect((await subscribe(world, plan.id)).body.status).toBe('trial');
    const end = (await subscription(world)).period_end as Date;

    const early = await renewAt(new Date(end.getTime() - DAY));
    expect(early.code, early.stderr).toBe(0);
    expect(early.stdout).toContain('"action":"none"');

    const declined = await renewAt(new Date(end.getTime() + 60_000), { TENANTRY_BILLING_SANDBOX_OUTCOME: 'decline' });
    expect(declined.code, declined.stderr).toBe(0);
    expect(declined.stdout).toContain('"action":"past_due"');
    expect(await subscription(world)).toMatchObject({ status: 'past_due', attempt_count: 1 });

    const cancelled = await renewAt(new Date(end.getTime() + 8 * DAY), { TENANTRY_BILLING_SANDBOX_OUTCOME: 'decline' });
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stdout).toContain('"action":"cancelled"');
    expect((await subscription(world)).status).toBe('cancelled');
    expect((await billingEvents(world)).at(-1)).toEqual({ name: 'billing.cancelled', payload: { reason: 'dunning' } });
  }, 180_000);

  it('renews as of --at when the charge settles', async () => {
    const plan = await createPlan(world, { price: 0 });
    const res = await subscribe(world, plan.id);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const end = (await subscription(world)).period_end as Date;
    const run = await renewAt(new Date(end.getTime() + 60_000));
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('"action":"renewed"');
    expect(((await subscription(world)).period_start as Date).getTime()).toBe(end.getTime());
  }, 120_000);
});
