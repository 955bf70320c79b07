import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { PAST_DEADLINE_PER_TENANT, TenantSeeder } from '../../scripts/bench/tenants-seed.ts';
import { PremiseError, SlotSource, premise } from '../../scripts/bench/tenants-premises.ts';

/**
 * The tenants bench's premises (issue 51): each stage sets the state its checks compare with,
 * whatever an earlier stage left, runs each job under a slot of its own, and stops when a check's
 * premise does not hold instead of reporting a figure over state it did not set.
 */

let app: TestApp;
let seeder: TenantSeeder;

beforeAll(async () => {
  app = await startTestApp();
  seeder = await TenantSeeder.open(app.databaseUrl);
});
afterAll(async () => {
  await seeder?.close();
  await app?.close();
});

const pool = () => app.services.db.pool;

describe("the tenants bench's premises", () => {
  it('each job run gets a slot of its own, even when stages start in the same minute', () => {
    const slots = new SlotSource();
    const at = Date.parse('2030-01-01T02:15:10.000Z');
    expect([slots.next(at), slots.next(at + 20_000), slots.next(at + 40_000)]).toEqual([
      '2030-01-01T02:15:00.000Z',
      '2030-01-01T02:16:00.000Z',
      '2030-01-01T02:17:00.000Z',
    ]);
    // Later than every slot handed out: its own minute.
    expect(slots.next(Date.parse('2030-01-01T03:00:59.000Z'))).toBe('2030-01-01T03:00:00.000Z');
  });

  it('a premise that does not hold stops the bench, naming what was found and what the stage set', () => {
    expect(() => premise('tenants 1000', 'bench subscriptions due before billing-renew', 1000, 1000)).not.toThrow();
    expect(() => premise('tenants 1000', 'bench subscriptions due before billing-renew', 900, 1000)).toThrow(
      new PremiseError(
        'tenants 1000: premise does not hold: bench subscriptions due before billing-renew is 900, the stage set 1000; no figure is taken over state the bench did not set',
      ),
    );
  });

  it('makeDue makes every bench subscription due again, whatever an earlier stage left it as', async () => {
    await seeder.growTo(3);
    const first = await seeder.makeDue();
    expect(first).toMatchObject({ subscriptions: 3, overdueTasks: 3 * PAST_DEADLINE_PER_TENANT });
    expect((await seeder.billingCheck()).due).toBe(3);

    // What a stage's renewal (or a stage gone wrong) can leave: renewed, ended, cancelled at period
    // end with a plan pending, past due.
    await pool().query(`update subscriptions s set period_end = now() + interval '1 month'
      from tenants t where t.id = s.tenant_id and t.slug = 'bt-1'`);
    await pool().query(`update subscriptions s set status = 'cancelled', ended_at = now() - interval '1 day'
      from tenants t where t.id = s.tenant_id and t.slug = 'bt-2'`);
    await pool().query(`update subscriptions s set status = 'past_due', attempt_count = 3, past_due_since = now() - interval '8 days',
        cancel_at_period_end = true, pending_plan_id = s.plan_id
      from tenants t where t.id = s.tenant_id and t.slug = 'bt-3'`);
    expect((await seeder.billingCheck()).due).toBe(1);

    expect(await seeder.makeDue()).toMatchObject({ subscriptions: 3 });
    expect((await seeder.billingCheck()).due).toBe(3);
    const { rows } = await pool().query(
      `select s.status, s.attempt_count, s.past_due_since, s.cancel_at_period_end, s.pending_plan_id, s.ended_at
         from subscriptions s join tenants t on t.id = s.tenant_id where t.slug like 'bt-%' order by t.slug`,
    );
    expect(rows).toEqual(
      Array.from({ length: 3 }, () => ({
        status: 'active',
        attempt_count: 0,
        past_due_since: null,
        cancel_at_period_end: false,
        pending_plan_id: null,
        ended_at: null,
      })),
    );
  });

  it("a sweep's premise fails when an earlier stage left expired sessions behind, and holds after a clean sweep", async () => {
    // A stage made due again with no sweep since the last: the sessions of both are there.
    const made = await seeder.makeDue();
    const found = await seeder.sweepCheck();
    expect(found.unmarked).toBe(made.overdueTasks);
    expect(() => premise('tenants 3', 'expired sessions before auth-sweep', found.sessions, made.sessions)).toThrow(
      PremiseError,
    );
    // Once a sweep has removed them all, the next stage finds exactly what it set.
    await pool().query('delete from sessions where expires_at <= now()');
    await pool().query('delete from set_password_tokens where used_at is not null');
    const next = await seeder.makeDue();
    const before = await seeder.sweepCheck();
    expect({ sessions: before.sessions, tokens: before.tokens }).toEqual({
      sessions: next.sessions,
      tokens: next.tokens,
    });
    expect(next.sessions).toBeGreaterThan(0);
    // Each fan-out queues one run per served tenant: the three bench tenants and the operator.
    expect(await seeder.servedTenants()).toBe(4);
  });
});
