import { expect } from 'vitest';
import type { Selectable } from 'kysely';
import type { SubscriptionsTable } from '../../../modules/billing/tables.ts';
import { startTestApp, createCustomer, signInAs, type TestApp } from '../../helpers/app.ts';
import { testConfig } from '../../helpers/config.ts';
import { SettableClock } from '../../../framework/clock.ts';
import { JobRunner } from '../../../framework/events/jobs.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { paymentProvider, type SandboxProvider, type SandboxOutcome } from '../../../modules/billing/provider.ts';

export const DAY = 24 * 60 * 60 * 1000;

export interface BillingWorld {
  app: TestApp;
  clock: SettableClock;
  /** The operator's cookie: billing:catalog and billing:read. */
  operator: string;
  customer: TenantRef;
  /** The customer's cookie: billing:read and billing:manage. */
  cookie: string;
  host: string;
}

export async function billingWorld(slug: string, options: { trialDays?: number } = {}): Promise<BillingWorld> {
  const clock = new SettableClock();
  const app = await startTestApp({ clock, config: testConfig({ billing: { trial_days: options.trialDays ?? 14 } }) });
  const customer = await createCustomer(app, slug);
  const operator = (await signInAs(app, app.operator, ['billing:catalog', 'billing:read'])).cookie;
  const cookie = (await signInAs(app, customer, ['billing:read', 'billing:manage'])).cookie;
  return { app, clock, operator, customer, cookie, host: `${slug}.localhost` };
}

let planCounter = 0;

export async function createPlan(
  world: BillingWorld,
  fields: Record<string, unknown> = {},
): Promise<Record<string, unknown> & { id: string }> {
  const res = await world.app
    .http()
    .post('/api/v1/billing/plans')
    .set('Cookie', world.operator)
    .send({
      code: `plan-${++planCounter}-${Math.random().toString(36).slice(2, 8)}`,
      name: 'Plan',
      price: 1000,
      currency: 'EUR',
      interval: 'month',
      features: ['webhook.endpoints'],
      active: true,
      ...fields,
    });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

export const subscribe = (world: BillingWorld, planId: string, cookie = world.cookie, host = world.host) =>
  world.app.http(host).post('/api/v1/billing/subscription/subscribe').set('Cookie', cookie).send({ planId });

export const cancel = (world: BillingWorld, atPeriodEnd: boolean) =>
  world.app
    .http(world.host)
    .post('/api/v1/billing/subscription/cancel')
    .set('Cookie', world.cookie)
    .send({ atPeriodEnd });

/** The tenant's stored subscription row (undefined, despite the type, when there is none). */
export async function subscription(
  world: BillingWorld,
  tenant: TenantRef = world.customer,
): Promise<Selectable<SubscriptionsTable>> {
  const { rows } = await world.app.services.db.pool.query<Selectable<SubscriptionsTable>>(
    `select * from subscriptions where tenant_id = $1 and deleted_at is null`,
    [tenant.id],
  );
  return rows[0]!;
}

export async function readSubscription(world: BillingWorld) {
  return world.app.http(world.host).get('/api/v1/billing/subscription').set('Cookie', world.cookie);
}

/** Runs billing-renew for the customer as of the clock's now, as the 02:15 schedule would. */
export async function renew(world: BillingWorld, tenant: TenantRef = world.customer) {
  const [outcome] = await new JobRunner(world.app.services).runOnce('billing-renew', { tenant });
  return outcome!;
}

export const sandbox = (world: BillingWorld): SandboxProvider => paymentProvider(world.app.services) as SandboxProvider;

export function setOutcome(world: BillingWorld, outcome: SandboxOutcome): void {
  sandbox(world).outcome = outcome;
}

/** The billing.* events the tenant's outbox holds, in order. */
export async function billingEvents(
  world: BillingWorld,
  tenant: TenantRef = world.customer,
): Promise<{ name: string; payload: Record<string, unknown> }[]> {
  const { rows } = await world.app.services.db.pool.query(
    `select name, payload from outbox where tenant_id = $1 and name like 'billing.%' order by id`,
    [tenant.id],
  );
  return rows;
}

/** Moves the clock to just after the subscription's period end. */
export async function toPeriodEnd(world: BillingWorld, plusMs = 60_000): Promise<Date> {
  const row = await subscription(world);
  const at = new Date((row.period_end as Date).getTime() + plusMs);
  world.clock.set(at);
  return at;
}
