import { afterAll, beforeAll, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createCustomer, signInAs } from '../../helpers/app.ts';
import { billingEvents, billingWorld, cancel, createPlan, sandbox, setOutcome, type BillingWorld } from './support.ts';
import { usePaymentProvider } from '../../../modules/billing/provider.ts';

/**
 * A prepared command (subscribe: prepare charges the first period, then the command's own
 * transaction stores the subscription) takes the Idempotency-Key too: the key commits with the
 * command's effect, and a retry is replayed before prepare runs, so it charges nothing again.
 */

let world: BillingWorld;
/** Calls to the provider: a retry that prepared again would call it again (its own key would replay the charge). */
let providerCalls = 0;

beforeAll(async () => {
  // No trial: the first period is charged at subscribe, in prepare.
  world = await billingWorld('subscribe-key-home', { trialDays: 0 });
  setOutcome(world, 'settle');
  const customer = await createCustomer(world.app, 'subscribe-key');
  world.customer = customer;
  world.host = 'subscribe-key.localhost';
  world.cookie = (await signInAs(world.app, customer, ['billing:read', 'billing:manage'])).cookie;
  const provider = sandbox(world);
  usePaymentProvider(world.app.services, {
    name: provider.name,
    charge: (request) => {
      providerCalls++;
      return provider.charge(request);
    },
  });
});
afterAll(async () => {
  await world?.app.close();
});

const charges = async () =>
  (
    await world.app.services.db.pool.query<{ n: number }>(
      'select count(*)::int as n from billing_sandbox_charges where tenant_id = $1',
      [world.customer.id],
    )
  ).rows[0]!.n;

const subscribeWithKey = (planId: string, key: string) =>
  world.app
    .http(world.host)
    .post('/api/v1/billing/subscription/subscribe')
    .set('Cookie', world.cookie)
    .set('Idempotency-Key', key)
    .send({ planId });

it('a retried paid subscribe replays the first answer: one charge, one billing.subscribed; another plan with the key is 422', async () => {
  const plan = await createPlan(world, { price: 1200 });
  const key = randomUUID();
  const first = await subscribeWithKey(plan.id, key);
  expect(first.status, JSON.stringify(first.body)).toBe(200);
  expect(await charges()).toBe(1);
  const again = await subscribeWithKey(plan.id, key);
  expect(again.status).toBe(200);
  expect(again.body).toEqual(first.body);
  expect(again.headers['idempotent-replayed']).toBe('true');
  expect(await charges()).toBe(1);
  expect(providerCalls).toBe(1);
  expect((await billingEvents(world)).filter((e) => e.name === 'billing.subscribed')).toHaveLength(1);
  // Even after the subscription changed (cancelled), the retry is the first request's answer.
  expect((await cancel(world, false)).status).toBe(200);
  const late = await subscribeWithKey(plan.id, key);
  expect(late.status).toBe(200);
  expect(late.body).toEqual(first.body);
  expect(providerCalls).toBe(1);
  const other = await createPlan(world, { price: 2400 });
  const reused = await subscribeWithKey(other.id, key);
  expect(reused.status).toBe(422);
  expect(reused.body.code).toBe('IDEMPOTENCY_KEY_REUSED');
});

it('OpenAPI declares the header on subscribe and names IDEMPOTENCY_KEY_REUSED beside its own 422', async () => {
  const op = (await world.app.http().get('/api/v1/openapi.json')).body.paths['/api/v1/billing/subscription/subscribe']
    .post;
  expect(op.parameters.map((p: { in: string; name: string }) => `${p.in} ${p.name}`)).toContain(
    'header idempotency-key',
  );
  expect(op.responses['422'].description).toMatch(/unknown or inactive plan.*IDEMPOTENCY_KEY_REUSED/);
});
